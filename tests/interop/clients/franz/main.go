// Command franz-driver is the franz-go (kgo) side of tests/interop/test_interop_franz.py. It
// runs the same way against groupbroker and against Apache Kafka and reports what the
// application sees as JSON lines on stdout (one object per event, "ev" says which); kgo's own
// log goes to stderr.
//
//	franz-driver topics  BOOTSTRAP PARTITIONS TOPIC...
//	franz-driver produce BOOTSTRAP TOPIC START COUNT PARTITIONS
//	franz-driver group   BOOTSTRAP TOPIC GROUP CLIENT_ID classic|consumer
//	franz-driver eos     BOOTSTRAP IN_TOPIC OUT_TOPIC GROUP CLIENT_ID TXN_ID HOLD_MS
//	franz-driver read    BOOTSTRAP TOPIC COUNT [uncommitted]
//	franz-driver offsets BOOTSTRAP GROUP TOPIC
//	franz-driver share   BOOTSTRAP TOPIC GROUP COUNT
//	franz-driver share-two    BOOTSTRAP TOPIC GROUP COUNT
//
// topics creates the topics (replication factor 1). produce writes the values
// m<START>..m<START+COUNT-1>, value m<i> to partition i%PARTITIONS, and exits once all are
// acknowledged. group is one member of a consumer group with the cooperative-sticky balancer
// (classic protocol) or the same balancer run by the broker (consumer: KIP-848, kgo's
// ServerSideBalancer, the "uniform" assignor); it commits what it polled before it lets a
// rebalance in (BlockRebalanceOnPoll) and again when partitions are revoked. eos is one
// member of a GroupTransactSession: it polls at most 10 records, produces "t<i>" for "m<i>"
// to the same partition of OUT_TOPIC, waits HOLD_MS inside the transaction and ends it,
// committing its offsets in the transaction. read reads TOPIC from the start with
// read_committed (read_uncommitted if asked) until it has COUNT records and nothing more comes
// for a second. offsets
// prints the group's committed offsets and the topic's end offsets. share is one member of a
// share group (KIP-932) that acknowledges each record: m3 RELEASE at its first delivery (ACCEPT
// at the next), m5 REJECT, m7 RELEASE every time (until the delivery limit archives it), the
// rest ACCEPT, until COUNT values are done and m7 came three times; each delivery is an event.
// share-two runs two members of one share group that accept implicitly (at their next poll)
// until COUNT distinct values came to them together; each delivery is an event naming its
// member.
// SIGTERM makes a member leave the group and exit 0.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log"
	"os"
	"os/signal"
	"sort"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

var outMu sync.Mutex

// emit writes one event as a JSON line; callbacks run on kgo's goroutines, hence the lock.
func emit(ev string, fields map[string]any) {
	if fields == nil {
		fields = map[string]any{}
	}
	fields["ev"] = ev
	fields["t"] = float64(time.Now().UnixNano()) / 1e9
	line, err := json.Marshal(fields)
	if err != nil {
		log.Fatalf("encoding an event: %v", err)
	}
	outMu.Lock()
	defer outMu.Unlock()
	os.Stdout.Write(append(line, '\n'))
}

func partitionsOf(m map[string][]int32) []int32 {
	out := []int32{}
	for _, ps := range m {
		out = append(out, ps...)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

func logger() kgo.Opt {
	level := kgo.LogLevelInfo
	if os.Getenv("FRANZ_DEBUG") != "" {
		level = kgo.LogLevelDebug
	}
	return kgo.WithLogger(kgo.BasicLogger(os.Stderr, level, func() string {
		return time.Now().Format("15:04:05.000 ")
	}))
}

func base(bootstrap, clientID string) []kgo.Opt {
	return []kgo.Opt{
		kgo.SeedBrokers(bootstrap),
		kgo.ClientID(clientID),
		kgo.MetadataMinAge(100 * time.Millisecond),
		kgo.RetryBackoffFn(func(int) time.Duration { return 100 * time.Millisecond }),
		logger(),
	}
}

// groupOpts: short sessions and the callbacks that report every assignment change.
func groupOpts(group, clientID string, topics ...string) []kgo.Opt {
	report := func(ev string) func(context.Context, *kgo.Client, map[string][]int32) {
		return func(_ context.Context, cl *kgo.Client, ps map[string][]int32) {
			member, generation := cl.GroupMetadata()
			emit(ev, map[string]any{"partitions": partitionsOf(ps), "member": member, "generation": generation})
		}
	}
	return []kgo.Opt{
		kgo.ConsumerGroup(group),
		kgo.ConsumeTopics(topics...),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.SessionTimeout(3 * time.Second),
		kgo.HeartbeatInterval(300 * time.Millisecond),
		kgo.RebalanceTimeout(10 * time.Second),
		kgo.FetchMaxWait(100 * time.Millisecond),
		kgo.OnPartitionsAssigned(report("assigned")),
		kgo.OnPartitionsRevoked(report("revoked")),
		kgo.OnPartitionsLost(report("lost")),
	}
}

func stopContext() context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	signals := make(chan os.Signal, 1)
	signal.Notify(signals, syscall.SIGTERM, syscall.SIGINT)
	go func() { <-signals; cancel() }()
	return ctx
}

func topics(bootstrap string, partitions int, names []string) error {
	cl, err := kgo.NewClient(base(bootstrap, "franz-admin")...)
	if err != nil {
		return err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	created, err := kadm.NewClient(cl).CreateTopics(ctx, int32(partitions), 1, nil, names...)
	if err != nil {
		return err
	}
	return created.Error()
}

func produce(bootstrap, topic string, start, count, partitions int) error {
	cl, err := kgo.NewClient(append(base(bootstrap, "franz-producer"),
		kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.RequiredAcks(kgo.AllISRAcks()))...)
	if err != nil {
		return err
	}
	defer cl.Close()
	records := make([]*kgo.Record, 0, count)
	for i := start; i < start+count; i++ {
		records = append(records, &kgo.Record{Partition: int32(i % partitions),
			Key: []byte("k" + strconv.Itoa(i)), Value: []byte("m" + strconv.Itoa(i))})
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	return cl.ProduceSync(ctx, records...).FirstErr()
}

func recordsOf(fs kgo.Fetches) [][3]any {
	out := [][3]any{}
	fs.EachRecord(func(r *kgo.Record) { out = append(out, [3]any{r.Partition, r.Offset, string(r.Value)}) })
	return out
}

func member(bootstrap, topic, group, clientID, protocol string) error {
	opts := append(base(bootstrap, clientID), groupOpts(group, clientID, topic)...)
	opts = append(opts, kgo.Balancers(kgo.CooperativeStickyBalancer()), kgo.DisableAutoCommit(),
		kgo.BlockRebalanceOnPoll())
	switch protocol {
	case "classic":
	case "consumer":
		opts = append(opts, kgo.ServerSideBalancer())
	default:
		return fmt.Errorf("unknown group protocol %q", protocol)
	}
	var cl *kgo.Client
	// What was polled is committed before a rebalance is let in; on a revocation (and on
	// Close) whatever is left is committed too, so the next owner starts after it.
	opts = append(opts, kgo.OnPartitionsRevoked(func(ctx context.Context, c *kgo.Client, ps map[string][]int32) {
		m, g := c.GroupMetadata()
		err := c.CommitUncommittedOffsets(ctx)
		emit("revoked", map[string]any{"partitions": partitionsOf(ps), "member": m, "generation": g,
			"commit_error": errString(err)})
	}))
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return err
	}
	ctx := stopContext()
	for {
		fs := cl.PollRecords(ctx, 100)
		fs.EachError(func(t string, p int32, err error) {
			if !errors.Is(err, context.Canceled) {
				log.Printf("fetch error %s[%d]: %v", t, p, err)
			}
		})
		if records := recordsOf(fs); len(records) > 0 {
			emit("records", map[string]any{"records": records})
			cctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			err := cl.CommitUncommittedOffsets(cctx)
			cancel()
			emit("commit", map[string]any{"ok": err == nil, "error": errString(err)})
		}
		cl.AllowRebalance()
		if ctx.Err() != nil {
			break
		}
	}
	cl.Close() // revokes (committing) and leaves the group
	emit("closed", nil)
	return nil
}

func errString(err error) any {
	if err == nil {
		return nil
	}
	return err.Error()
}

func eos(bootstrap, in, out, group, clientID, txnID string, hold time.Duration) error {
	opts := append(base(bootstrap, clientID), groupOpts(group, clientID, in)...)
	opts = append(opts, kgo.TransactionalID(txnID), kgo.TransactionTimeout(10*time.Second),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.RequireStableFetchOffsets(),
		kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.DefaultProduceTopic(out))
	s, err := kgo.NewGroupTransactSession(opts...)
	if err != nil {
		return err
	}
	ctx := stopContext()
	for ctx.Err() == nil {
		fs := s.PollRecords(ctx, 10)
		fs.EachError(func(t string, p int32, err error) {
			if !errors.Is(err, context.Canceled) {
				log.Printf("fetch error %s[%d]: %v", t, p, err)
			}
		})
		consumed := recordsOf(fs)
		if len(consumed) == 0 {
			continue
		}
		if err := s.Begin(); err != nil {
			return fmt.Errorf("begin: %w", err)
		}
		var outs []*kgo.Record
		fs.EachRecord(func(r *kgo.Record) {
			outs = append(outs, &kgo.Record{Partition: r.Partition, Key: r.Key,
				Value: append([]byte("t"), r.Value[1:]...)})
		})
		tctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		produceErr := s.ProduceSync(tctx, outs...).FirstErr()
		emit("produced", map[string]any{"records": consumed, "error": errString(produceErr)})
		time.Sleep(hold)
		committed, err := s.End(tctx, kgo.TransactionEndTry(produceErr == nil))
		cancel()
		emit("txn", map[string]any{"records": consumed, "committed": committed, "error": errString(err)})
	}
	s.Close()
	emit("closed", nil)
	return nil
}

func read(bootstrap, topic string, count int, isolation kgo.IsolationLevel) error {
	cl, err := kgo.NewClient(append(base(bootstrap, "franz-reader"), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchIsolationLevel(isolation),
		kgo.FetchMaxWait(100*time.Millisecond))...)
	if err != nil {
		return err
	}
	defer cl.Close()
	deadline := time.Now().Add(30 * time.Second)
	seen, quietSince := 0, time.Now()
	for time.Now().Before(deadline) && (seen < count || time.Since(quietSince) < time.Second) {
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		fs := cl.PollFetches(ctx)
		cancel()
		fs.EachError(func(t string, p int32, err error) {
			if !errors.Is(err, context.DeadlineExceeded) {
				log.Printf("fetch error %s[%d]: %v", t, p, err)
			}
		})
		if records := recordsOf(fs); len(records) > 0 {
			seen += len(records)
			quietSince = time.Now()
			emit("records", map[string]any{"records": records})
		}
	}
	emit("done", map[string]any{"count": seen})
	return nil
}

func offsets(bootstrap, group, topic string) error {
	cl, err := kgo.NewClient(base(bootstrap, "franz-admin")...)
	if err != nil {
		return err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	fetched, err := adm.FetchOffsets(ctx, group)
	if err != nil {
		return err
	}
	if err := fetched.Error(); err != nil {
		return err
	}
	ends, err := adm.ListEndOffsets(ctx, topic)
	if err != nil {
		return err
	}
	committed, end := map[string]int64{}, map[string]int64{}
	fetched.Each(func(o kadm.OffsetResponse) {
		if o.Topic == topic {
			committed[strconv.Itoa(int(o.Partition))] = o.At
		}
	})
	ends.Each(func(o kadm.ListedOffset) {
		if o.Err != nil {
			err = o.Err
		}
		end[strconv.Itoa(int(o.Partition))] = o.Offset
	})
	if err != nil {
		return err
	}
	emit("offsets", map[string]any{"committed": committed, "ends": end})
	return nil
}

func ints(args []string) []int {
	out := make([]int, len(args))
	for i, s := range args {
		n, err := strconv.Atoi(s)
		if err != nil {
			log.Fatalf("not a number: %q", s)
		}
		out[i] = n
	}
	return out
}

func share(bootstrap, topic, group string, count int) error {
	cl, err := shareMember(bootstrap, topic, group)
	if err != nil {
		return err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	done, poison := map[string]bool{}, 0
	for (len(done) < count || poison < 3) && ctx.Err() == nil {
		fetches := cl.PollFetches(ctx)
		fetches.EachRecord(func(r *kgo.Record) {
			value, n := string(r.Value), r.DeliveryCount()
			status, name := kgo.AckAccept, "ACCEPT"
			switch {
			case value == "m3" && n == 1:
				status, name = kgo.AckRelease, "RELEASE"
			case value == "m5":
				status, name = kgo.AckReject, "REJECT"
			case value == "m7":
				status, name = kgo.AckRelease, "RELEASE"
				poison++
			}
			r.Ack(status)
			if status != kgo.AckRelease || value == "m7" {
				done[value] = true
			}
			emit("delivery", map[string]any{"value": value, "count": n, "ack": name})
		})
		if err := cl.FlushAcks(ctx); err != nil {
			return err
		}
	}
	return ctx.Err()
}

func shareMember(bootstrap, topic, group string) (*kgo.Client, error) {
	return kgo.NewClient(kgo.SeedBrokers(bootstrap), kgo.ShareGroup(group), kgo.ConsumeTopics(topic), logger())
}

// shareTwo: two members, implicit acknowledgement (a record not acked is accepted at the next
// poll). Both stop polling before either closes: a closing member releases what its last poll
// got (not acknowledged), which the other would rightly take again.
func shareTwo(bootstrap, topic, group string, count int) error {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var mu sync.Mutex
	seen := map[string]bool{}
	var wg sync.WaitGroup
	errs := make(chan error, 2)
	for _, name := range []string{"a", "b"} {
		cl, err := shareMember(bootstrap, topic, group)
		if err != nil {
			return err
		}
		defer cl.Close()
		wg.Add(1)
		go func(name string, cl *kgo.Client) {
			defer wg.Done()
			for ctx.Err() == nil {
				mu.Lock()
				finished := len(seen) >= count
				mu.Unlock()
				if finished {
					return
				}
				pollCtx, stop := context.WithTimeout(ctx, 500*time.Millisecond)
				fetches := cl.PollFetches(pollCtx)
				stop()
				fetches.EachRecord(func(r *kgo.Record) {
					mu.Lock()
					seen[string(r.Value)] = true
					mu.Unlock()
					emit("delivery", map[string]any{"member": name, "value": string(r.Value), "count": r.DeliveryCount()})
				})
			}
			errs <- ctx.Err()
		}(name, cl)
	}
	wg.Wait()
	close(errs)
	return <-errs
}

func main() {
	log.SetOutput(os.Stderr)
	log.SetFlags(log.Ltime | log.Lmicroseconds)
	args := os.Args[1:]
	var err error
	switch {
	case len(args) >= 4 && args[0] == "topics":
		err = topics(args[1], ints(args[2:3])[0], args[3:])
	case len(args) == 6 && args[0] == "produce":
		n := ints(args[3:])
		err = produce(args[1], args[2], n[0], n[1], n[2])
	case len(args) == 6 && args[0] == "group":
		err = member(args[1], args[2], args[3], args[4], args[5])
	case len(args) == 8 && args[0] == "eos":
		err = eos(args[1], args[2], args[3], args[4], args[5], args[6],
			time.Duration(ints(args[7:])[0])*time.Millisecond)
	case len(args) == 4 && args[0] == "read":
		err = read(args[1], args[2], ints(args[3:])[0], kgo.ReadCommitted())
	case len(args) == 5 && args[0] == "read" && args[4] == "uncommitted":
		err = read(args[1], args[2], ints(args[3:4])[0], kgo.ReadUncommitted())
	case len(args) == 4 && args[0] == "offsets":
		err = offsets(args[1], args[2], args[3])
	case len(args) == 5 && args[0] == "share":
		err = share(args[1], args[2], args[3], ints(args[4:])[0])
	case len(args) == 5 && args[0] == "share-two":
		err = shareTwo(args[1], args[2], args[3], ints(args[4:])[0])
	default:
		log.Fatalf("usage: see the comment at the top of main.go")
	}
	if err != nil {
		log.Fatalf("%s: %v", args[0], err)
	}
}
