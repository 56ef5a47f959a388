package main

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"time"

	natsgo "github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

func main() {
	ctx := context.Background()
	nc, err := natsgo.Connect(os.Args[1])
	if err != nil {
		panic(err)
	}
	js, _ := jetstream.New(nc)
	sc := jetstream.StreamConfig{Name: "ORDERS", Subjects: []string{"orders.>"}, Duplicates: 3 * time.Second, Storage: jetstream.FileStorage, MaxAge: time.Hour}
	cc := jetstream.ConsumerConfig{Durable: "w", AckPolicy: jetstream.AckExplicitPolicy, AckWait: 2 * time.Second, MaxDeliver: 4}
	switch os.Args[2] {
	case "base":
	case "discard":
		sc.Discard, sc.MaxMsgs = jetstream.DiscardNew, 5
	case "filter":
		cc.FilterSubject = "orders.other"
	case "deliver":
		cc.DeliverPolicy = jetstream.DeliverNewPolicy
	case "map":
		cc.MaxAckPending, _ = strconv.Atoi("1")
	}
	js.DeleteConsumer(ctx, "ORDERS", "w")
	if _, err := js.CreateOrUpdateStream(ctx, sc); err != nil {
		panic(err)
	}
	if _, err := js.CreateOrUpdateConsumer(ctx, "ORDERS", cc); err != nil {
		panic(err)
	}
	fmt.Println("configured", os.Args[2])
}
