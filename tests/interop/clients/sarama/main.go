// Command sarama-driver is the Sarama (IBM/sarama, from the Go module proxy, go.mod) side of
// tests/interop/test_interop_sarama.py: it produces to, or consumes in a group from, a
// groupbroker or an Apache Kafka.
//
//	sarama-driver produce BOOTSTRAP TOPIC START COUNT PARTITIONS
//	sarama-driver consume BOOTSTRAP TOPIC GROUP CLIENT_ID
//
// produce sends the values m<START>..m<START+COUNT-1>, value m<i> to partition i%PARTITIONS,
// and exits 0 once the broker acknowledged all of them (acks=all). consume joins GROUP at
// sarama.V4_3_1_0 (the oracle's version) with the range strategy and prints each record as "partition offset value" on stdout, marking it
// for Sarama's periodic offset commit; SIGTERM closes the group (LeaveGroup) and exits 0.
// Sarama's own log goes to stderr.
package main

import (
	"context"
	"fmt"
	"log"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"github.com/IBM/sarama"
)

func config(clientID string) *sarama.Config {
	c := sarama.NewConfig()
	c.Version = sarama.V4_3_1_0
	c.ClientID = clientID
	c.Metadata.Retry.Backoff = 100 * time.Millisecond
	return c
}

func produce(bootstrap, topic string, start, count, partitions int) error {
	c := config("sarama-producer")
	c.Producer.RequiredAcks = sarama.WaitForAll
	c.Producer.Return.Successes = true
	c.Producer.Partitioner = sarama.NewManualPartitioner
	producer, err := sarama.NewSyncProducer([]string{bootstrap}, c)
	if err != nil {
		return err
	}
	messages := make([]*sarama.ProducerMessage, 0, count)
	for i := start; i < start+count; i++ {
		messages = append(messages, &sarama.ProducerMessage{
			Topic: topic, Partition: int32(i % partitions),
			Value: sarama.StringEncoder("m" + strconv.Itoa(i)),
		})
	}
	if err := producer.SendMessages(messages); err != nil {
		producer.Close()
		return err
	}
	return producer.Close()
}

// handler prints every record of every claim and marks it for the next periodic commit.
type handler struct{}

func (handler) Setup(s sarama.ConsumerGroupSession) error {
	log.Printf("generation %d member %s claims %v", s.GenerationID(), s.MemberID(), s.Claims())
	return nil
}

func (handler) Cleanup(s sarama.ConsumerGroupSession) error {
	log.Printf("generation %d ends", s.GenerationID())
	return nil
}

func (handler) ConsumeClaim(s sarama.ConsumerGroupSession, claim sarama.ConsumerGroupClaim) error {
	for m := range claim.Messages() {
		fmt.Printf("%d %d %s\n", m.Partition, m.Offset, m.Value)
		s.MarkMessage(m, "")
	}
	return nil
}

func consume(bootstrap, topic, group, clientID string) error {
	c := config(clientID)
	c.Consumer.Return.Errors = true
	c.Consumer.Offsets.Initial = sarama.OffsetOldest
	c.Consumer.Offsets.CommitInterval = 100 * time.Millisecond
	c.Consumer.MaxWaitTime = 100 * time.Millisecond
	c.Consumer.Group.Session.Timeout = 10 * time.Second
	c.Consumer.Group.Heartbeat.Interval = 300 * time.Millisecond
	c.Consumer.Group.Rebalance.Timeout = 10 * time.Second
	c.Consumer.Group.Rebalance.Retry.Backoff = 100 * time.Millisecond
	cg, err := sarama.NewConsumerGroup([]string{bootstrap}, group, c)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(context.Background())
	signals := make(chan os.Signal, 1)
	signal.Notify(signals, syscall.SIGTERM, syscall.SIGINT)
	go func() { <-signals; cancel() }()
	go func() {
		for err := range cg.Errors() {
			log.Printf("consumer group error: %v", err)
		}
	}()
	for ctx.Err() == nil {
		// Consume returns at the end of every generation; join the next one.
		if err := cg.Consume(ctx, []string{topic}, handler{}); err != nil && ctx.Err() == nil {
			log.Printf("consume: %v", err)
			time.Sleep(100 * time.Millisecond)
		}
	}
	return cg.Close()
}

func main() {
	log.SetOutput(os.Stderr)
	sarama.Logger = log.New(os.Stderr, "[sarama] ", log.LstdFlags|log.Lmicroseconds)
	args := os.Args[1:]
	var err error
	switch {
	case len(args) == 6 && args[0] == "produce":
		n := make([]int, 3)
		for i, s := range args[3:] {
			if n[i], err = strconv.Atoi(s); err != nil {
				log.Fatalf("not a number: %q", s)
			}
		}
		err = produce(args[1], args[2], n[0], n[1], n[2])
	case len(args) == 5 && args[0] == "consume":
		err = consume(args[1], args[2], args[3], args[4])
	default:
		log.Fatalf("usage: %s produce BOOTSTRAP TOPIC START COUNT PARTITIONS | consume BOOTSTRAP TOPIC GROUP CLIENT_ID", os.Args[0])
	}
	if err != nil {
		log.Fatalf("%s: %v", args[0], err)
	}
}
