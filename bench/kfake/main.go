// A kfake cluster (franz-go's in-memory Kafka) for the benchmarks: it listens on 127.0.0.1,
// prints "kfake listening on HOST:PORT[,HOST:PORT...]" once it serves, and runs until its
// standard input closes or it gets SIGTERM/SIGINT.
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/twmb/franz-go/pkg/kfake"
)

func main() {
	brokers := flag.Int("brokers", 1, "brokers in the cluster")
	port := flag.Int("port", 0, "the first broker's port (0: any free port)")
	dataDir := flag.String("data-dir", "", "persist the cluster's state here (empty: memory only)")
	var configs multiFlag
	flag.Var(&configs, "config", "a broker config KEY=VALUE (repeatable)")
	flag.Parse()

	opts := []kfake.Opt{kfake.NumBrokers(*brokers), kfake.AllowAutoTopicCreation()}
	if *port != 0 {
		ports := make([]int, *brokers)
		for i := range ports {
			ports[i] = *port + i
		}
		opts = append(opts, kfake.Ports(ports...))
	}
	if *dataDir != "" {
		opts = append(opts, kfake.DataDir(*dataDir))
	}
	if len(configs) > 0 {
		m := map[string]string{}
		for _, kv := range configs {
			k, v, _ := strings.Cut(kv, "=")
			m[k] = v
		}
		opts = append(opts, kfake.BrokerConfigs(m))
	}
	c, err := kfake.NewCluster(opts...)
	if err != nil {
		fmt.Fprintln(os.Stderr, "kfake:", err)
		os.Exit(1)
	}
	fmt.Printf("kfake listening on %s\n", strings.Join(c.ListenAddrs(), ","))

	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT)
	go func() {
		_, _ = io.Copy(io.Discard, os.Stdin)
		stop <- syscall.SIGTERM
	}()
	<-stop
	c.Close()
}

type multiFlag []string

func (m *multiFlag) String() string     { return strings.Join(*m, ",") }
func (m *multiFlag) Set(v string) error { *m = append(*m, v); return nil }
