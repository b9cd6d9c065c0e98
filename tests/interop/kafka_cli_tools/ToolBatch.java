import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import org.apache.kafka.common.utils.Exit;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.File;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.PrintStream;
import java.lang.reflect.InvocationTargetException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Pattern;

/**
 * Runs Kafka command-line tools one after another in this one JVM, so that a test pays for one
 * JVM start-up instead of one per call (tests/interop/test_kafka_cli_tools.py).
 *
 * <p>Usage: {@code java -cp <this dir>:<kafka lib>/* ToolBatch calls.json results.json}. The input
 * is a JSON list of {@code {"main": class, "args": [...], "stdin": text}}; the output is a JSON
 * list of {@code {"stdout", "stderr", "code", "seconds"}} in the same order. Each tool's
 * System.out, System.err and System.in are its own; Kafka's tools end through
 * {@code org.apache.kafka.common.utils.Exit}, whose procedure here ends the call instead of the
 * JVM and records the code (anything printed after that first exit is dropped, as the JVM would
 * be gone), and the shutdown hooks registered through {@code Exit.addShutdownHook} run when the
 * call ends; a main that returns has exit code 0, one that throws exit code 1
 * with the stack trace on its stderr, as the JVM would report them.
 *
 * <p>A call may carry {@code "until": regex}: it is then run again (every 50 ms, for at most
 * 15 s) until its stdout contains a match, and the last run is reported, with {@code "runs"}.
 * That waits for what a broker applies a moment after it answers (Kafka's authorizer learns
 * ACLs from its metadata log) without a fixed sleep.
 */
public final class ToolBatch {

    /** Thrown by the exit procedure: carries the tool's exit code out of its main. */
    static final class Exited extends RuntimeException {
        final int code;

        Exited(int code) {
            super("exit " + code, null, false, false);
            this.code = code;
        }
    }

    /** The current call's output: kept until the tool first exits, dropped after (a real JVM would be gone). */
    static final class Gate extends OutputStream {
        final ByteArrayOutputStream kept = new ByteArrayOutputStream();
        volatile boolean open = true;

        @Override
        public void write(int b) {
            if (open) {
                kept.write(b);
            }
        }

        @Override
        public void write(byte[] b, int off, int len) {
            if (open) {
                kept.write(b, off, len);
            }
        }
    }

    static Gate out;
    static Gate err;
    static Integer exitCode;

    static synchronized void exit(int code) {
        if (exitCode == null) {
            exitCode = code;
            System.out.flush();
            System.err.flush();
            out.open = false;
            err.open = false;
        }
        throw new Exited(code);
    }

    public static void main(String[] argv) throws Exception {
        ObjectMapper json = new ObjectMapper();
        JsonNode calls = json.readTree(new File(argv[0]));
        ArrayNode results = json.createArrayNode();
        PrintStream realOut = System.out;
        PrintStream realErr = System.err;
        InputStream realIn = System.in;
        Exit.setExitProcedure((code, message) -> exit(code));
        Exit.setHaltProcedure((code, message) -> exit(code));
        // what a tool would run as the JVM ends (a console producer's flush and close) runs as its call ends
        List<Runnable> hooks = new ArrayList<>();
        Exit.setShutdownHookAdder((name, hook) -> hooks.add(hook));
        for (JsonNode call : calls) {
            Pattern until = call.hasNonNull("until") ? Pattern.compile(call.get("until").asText()) : null;
            long deadline = System.nanoTime() + 15_000_000_000L;
            int runs = 0;
            ObjectNode result;
            while (true) {
                result = runOnce(call, hooks, realOut, realErr, realIn);
                runs++;
                if (until == null || until.matcher(result.get("stdout").asText()).find()
                        || System.nanoTime() > deadline) {
                    break;
                }
                Thread.sleep(50);
            }
            result.put("runs", runs);
            results.add(result);
        }
        json.writerWithDefaultPrettyPrinter().writeValue(new File(argv[1]), results);
        // a tool may leave non-daemon threads behind (admin clients closing, producers' senders)
        Runtime.getRuntime().halt(0);
    }

    /** One run of a tool's main with its own stdout, stderr and stdin: its result. */
    static ObjectNode runOnce(JsonNode call, List<Runnable> hooks, PrintStream realOut, PrintStream realErr,
                              InputStream realIn) throws Exception {
        synchronized (ToolBatch.class) {
            out = new Gate();
            err = new Gate();
            exitCode = null;
        }
        PrintStream toolOut = new PrintStream(out, true, StandardCharsets.UTF_8);
        PrintStream toolErr = new PrintStream(err, true, StandardCharsets.UTF_8);
        System.setOut(toolOut);
        System.setErr(toolErr);
        System.setIn(new ByteArrayInputStream(call.path("stdin").asText("").getBytes(StandardCharsets.UTF_8)));
        String[] args = new String[call.path("args").size()];
        for (int i = 0; i < args.length; i++) {
            args[i] = call.get("args").get(i).asText();
        }
        long started = System.nanoTime();
        try {
            Class.forName(call.get("main").asText()).getMethod("main", String[].class).invoke(null, (Object) args);
        } catch (InvocationTargetException e) {
            Throwable cause = e.getCause();
            if (!(cause instanceof Exited) && exitCode == null) {
                toolErr.print("Exception in thread \"main\" ");
                cause.printStackTrace(toolErr);
                exitCode = 1;
            }
        } finally {
            for (Runnable hook : hooks) {
                try {
                    hook.run();
                } catch (RuntimeException e) {
                    // a real JVM ignores a failing shutdown hook too
                }
            }
            hooks.clear();
            toolOut.flush();
            toolErr.flush();
            System.setOut(realOut);
            System.setErr(realErr);
            System.setIn(realIn);
        }
        ObjectNode result = new ObjectMapper().createObjectNode();
        result.put("stdout", out.kept.toString(StandardCharsets.UTF_8));
        result.put("stderr", err.kept.toString(StandardCharsets.UTF_8));
        result.put("code", exitCode == null ? 0 : exitCode);
        result.put("seconds", (System.nanoTime() - started) / 1e9);
        return result;
    }
}
