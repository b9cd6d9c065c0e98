import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Optional;
import java.util.StringJoiner;

/** The one JSON document each scenario program prints: maps, collections, numbers, booleans,
 *  Optionals and null as JSON, anything else as its toString. Written here rather than with a
 *  library because the client's classpath carries none; a map or collection another thread may
 *  still fill is read under its own lock. Compiled into every program under clients/. */
final class Json {
    private Json() {}

    static String json(Object o) {
        StringBuilder sb = new StringBuilder();
        write(sb, o);
        return sb.toString();
    }

    /** An ordered map from alternating keys and values. */
    static Map<String, Object> obj(Object... kv) {
        Map<String, Object> m = new LinkedHashMap<>();
        for (int i = 0; i < kv.length; i += 2) m.put((String) kv[i], kv[i + 1]);
        return m;
    }

    static void write(StringBuilder sb, Object o) {
        if (o == null) {
            sb.append("null");
        } else if (o instanceof Map<?, ?> m) {
            StringJoiner j = new StringJoiner(",", "{", "}");
            synchronized (m) {
                for (Map.Entry<?, ?> e : m.entrySet()) j.add(json(String.valueOf(e.getKey())) + ":" + json(e.getValue()));
            }
            sb.append(j);
        } else if (o instanceof Collection<?> c) {
            StringJoiner j = new StringJoiner(",", "[", "]");
            synchronized (c) {
                for (Object x : c) j.add(json(x));
            }
            sb.append(j);
        } else if (o instanceof Number || o instanceof Boolean) {
            sb.append(o);
        } else if (o instanceof Optional<?> opt) {
            write(sb, opt.orElse(null));
        } else {
            sb.append('"');
            for (char ch : o.toString().toCharArray()) {
                if (ch == '"' || ch == '\\') sb.append('\\').append(ch);
                else if (ch < 0x20) sb.append(String.format("\\u%04x", (int) ch));
                else sb.append(ch);
            }
            sb.append('"');
        }
    }
}
