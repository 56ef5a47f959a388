package broker

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/onsi/gomega"

	"github.com/onceproof/tck/internal/kithooks"
	"github.com/onceproof/tck/internal/spec"
	"github.com/onceproof/tck/internal/verdict"
	"github.com/onceproof/tck/mq"
)

// freshIDHazard records what BR-1.6's staged fresh-id retry showed: a
// hazard for any producer that retries with fresh ids, unless the
// declaration says every producer keeps its id, which makes it a note (the
// kit's own demonstration, not the team's finding).
func freshIDHazard(d *kithooks.Declared, r *spec.R, copies int) {
	if d == nil || len(d.Producers) == 0 {
		r.Ev.Hazard("a producer that retries a lost publish ack with a fresh message id stores the same intent twice (%d copies): keep the id stable across retries (seed 002, 二)", copies)
		return
	}
	var fresh []string
	for _, p := range d.Producers {
		if !p.KeepsID {
			fresh = append(fresh, fmt.Sprintf("%s (stream %s)", p.Name, p.Stream))
		}
	}
	if len(fresh) > 0 {
		r.Ev.Hazard("the declared producer %s mints a fresh message id per retry: after a lost publish ack it stores the same intent twice, as the kit's fresh-id retry did (%d copies); keep the id stable across retries (seed 002, 二)", strings.Join(fresh, ", "), copies)
		return
	}
	r.Ev.Notef("the kit's staged fresh-id retry stored the intent twice (%d copies), as expected; every declared producer keeps its message id across retries, so this is no hazard of the declared pipeline", copies)
}

// applyDeclared gives t its declaration's settings: the windows the rules
// use are the team's.
func applyDeclared(t target) target {
	d := t.Declared
	if len(d.Streams) == 0 {
		return t
	}
	t = batchesDeclared(d, t)
	s := d.Streams[0]
	if w := s.Topic.Config.DedupeWindow; w > 0 && t.Caps.DedupeWindow > 0 {
		t.Caps.DedupeWindow = w
	}
	t.Windows.Storage = s.Topic.Config.Storage
	t.Windows.MaxAge = s.Topic.Config.MaxAge
	if d.OnServer {
		t.Windows.Replicas = s.Topic.Config.Replicas
	}
	if len(s.Consumers) > 0 {
		c := s.Consumers[0].Config
		t.Windows.AckWait = c.AckWait
		t.Windows.Backoff = c.Backoff
		if c.MaxDeliver > 0 {
			t.Windows.MaxDeliver = c.MaxDeliver
		}
	}
	return t
}

// setupHazards are the differences between what the rules run with and
// the declaration that come from the kit's set-up.
func setupHazards(d *kithooks.Declared, t target) []string {
	out := append([]string(nil), d.SetupHazards...)
	if len(d.Streams) == 0 {
		return out
	}
	s := d.Streams[0]
	if len(d.Streams) > 1 || len(s.Consumers) > 1 {
		out = append(out, fmt.Sprintf("the timed rules' scratch topics use the settings of the first declared stream %s and its first consumer; the others are compared with the server (BR-6.1) but not measured", s.Topic.Name))
	}
	if ageTooShort(t.Windows, t.Budget) {
		out = append(out, fmt.Sprintf("the declared maxAge %s is shorter than a rule may hold a message (its read-back comes after the run's waits, up to the limit %s): the timed rules' scratch topics keep messages without an age limit, or they would expire before being judged; BR-6.1's scratch copy has the declared maxAge", t.Windows.MaxAge, t.Budget))
	}
	if !d.OnServer && s.Topic.Config.Replicas > 1 {
		out = append(out, fmt.Sprintf("the declared %d replicas are not reproduced: the kit's own server is a single node, so its scratch topics have one", s.Topic.Config.Replicas))
	}
	if len(s.Consumers) == 0 {
		out = append(out, fmt.Sprintf("stream %s declares no consumer: the delivery rules ran with the kit's own test windows (ack wait %s, max deliver %d)", s.Topic.Name, t.Windows.AckWait, t.Windows.MaxDeliver))
	} else if s.Consumers[0].Config.MaxDeliver <= 0 && !s.ClientSide {
		out = append(out, fmt.Sprintf("consumer %s declares no max deliver (unlimited): BR-2.6 tested a limit of %d of the kit's own", s.Consumers[0].Config.Group, t.Windows.MaxDeliver))
	}
	return out
}

// describe is the declaration's waits in one phrase, for a reason.
func (t target) declaredWaits() string {
	w := t.Windows
	parts := []string{}
	if t.Caps.DedupeWindow > 0 {
		parts = append(parts, "de-dupe window "+t.Caps.DedupeWindow.String())
	}
	parts = append(parts, "ack wait "+w.AckWait.String())
	if len(w.Backoff) > 0 {
		parts = append(parts, "back-off "+durations(w.Backoff))
	}
	parts = append(parts, fmt.Sprintf("max deliver %d", w.MaxDeliver))
	return strings.Join(parts, ", ")
}

func durations(ds []time.Duration) string {
	if len(ds) == 0 {
		return "none"
	}
	s := make([]string, len(ds))
	for i, d := range ds {
		s[i] = d.String()
	}
	return "[" + strings.Join(s, ", ") + "]"
}

func registerProfile(p *plan) {
	p.set.Background("BR-6.1", p.workload("BR-6.1", func(kithooks.Windows, mq.Capabilities) time.Duration { return 0 }, certify))
}

// certify is BR-6.1: read the declared streams and consumers from the
// server and compare every setting; without a declaration on the server,
// create a scratch stream and consumer with the declared (or the kit's)
// settings through the client under test and read those back.
func certify(f *fixture) judge {
	f.notTimed() // settings read from the server
	var in mq.Inspector
	if err := f.kitStep("open-inspector", "read-only view of the server's settings", func() (err error) {
		in, err = f.t.Inspect(f.ctx)
		return err
	}); err != nil {
		return f.failed(err, "opening the read-only view")
	}
	f.defer_(func() { _ = in.Close() })
	d := f.t.Declared
	for _, h := range setupHazardsOrNil(d, f.t) {
		f.ev.SetupHazard("%s", h)
	}
	var streams []kithooks.DeclaredStream
	if d != nil && d.OnServer {
		streams = d.Streams
		f.ev.Notef("the declared streams of %s, read by name from the server (read only: nothing is created, changed or deleted)", d.Source)
	} else {
		s, err := f.scratchCopy()
		if err != nil {
			return f.failed(err, "creating the scratch copy")
		}
		streams = []kithooks.DeclaredStream{s}
	}
	var diffs []string
	for _, s := range streams {
		ds, err := f.compareStream(in, s)
		if err != nil {
			return f.failed(err, "reading the server's settings")
		}
		diffs = append(diffs, ds...)
	}
	var unreadable []string
	if si, err := in.Server(f.ctx); err == nil {
		f.ev.Figure("server version", si.Version, "")
		keys := make([]string, 0, len(si.Settings))
		for k := range si.Settings {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			f.ev.Notef("server %s: %s", k, si.Settings[k])
		}
		var ds []string
		ds, unreadable = f.compareServer(d, si.Settings)
		diffs = append(diffs, ds...)
	} else if d != nil && d.Server != nil {
		return f.failed(&setupError{step: "server-info", err: err}, "reading the server's settings")
	}
	n := len(f.ev.Snapshot().Comparisons)
	f.ev.Figure("settings compared", n, "")
	return func(r *spec.R) {
		r.Expect(diffs).To(gomega.BeEmpty(), "the server's settings differ from the declared ones (%s)", strings.Join(diffs, "; "))
		if len(unreadable) > 0 {
			r.Unknown("the server would not tell %s: the declared value cannot be compared (let the kit's login read it, e.g. Redis CONFIG GET / INFO, or certify on a server that answers)", strings.Join(unreadable, "; "))
		}
		if len(f.unreadable) > 0 {
			r.Unknown("the server would not tell %s: the declared value cannot be compared", strings.Join(f.unreadable, "; "))
		}
		if len(f.undecided) > 0 {
			r.Unknown("%s", strings.Join(f.undecided, "; "))
		}
		r.Ev.Notef("%d declared settings of %d stream(s) compared with the server's: all equal", n, len(streams))
	}
}

// setupHazardsOrNil is setupHazards, nil without a declaration.
func setupHazardsOrNil(d *kithooks.Declared, t target) []string {
	if d == nil {
		return nil
	}
	return setupHazards(d, t)
}

// scratchCopy creates, through the client under test, a topic and a
// consumer with the settings the rules use (the declared ones under a
// profile, else the kit's), and returns them as declared under the
// server's names.
func (f *fixture) scratchCopy() (kithooks.DeclaredStream, error) {
	// The declared max age, however short: this copy holds no message.
	cfg := mq.TopicConfig{DedupeWindow: window(f.t.Caps), Retention: mq.Limits, MaxAge: f.w.MaxAge}
	if d := f.t.Declared; d != nil && len(d.Streams) > 0 && d.Streams[0].Topic.Config.Retention != "" {
		cfg.Retention = d.Streams[0].Topic.Config.Retention
	}
	topic, err := f.topic("t", cfg)
	if err != nil {
		return kithooks.DeclaredStream{}, err
	}
	// What topicOn added of the run's own settings is declared too.
	if cfg.Storage == "" {
		cfg.Storage = f.w.Storage
	}
	if cfg.MaxAge == 0 {
		cfg.MaxAge = f.w.MaxAge
	}
	if cfg.Replicas == 0 {
		cfg.Replicas = f.w.Replicas
	}
	group := f.name("g")
	cc := mq.ConsumerConfig{AckWait: f.w.AckWait, MaxDeliver: f.w.MaxDeliver, Backoff: f.w.Backoff}
	if d := f.t.Declared; d != nil && len(d.Streams) > 0 && len(d.Streams[0].Consumers) > 0 {
		// The declared limit, unlimited included (the kit's own 3 is for
		// BR-2.6 only, and may be shorter than a back-off list).
		cc.MaxDeliver = d.Streams[0].Consumers[0].Config.MaxDeliver
	}
	if _, err := f.consumer(topic, group, cc); err != nil {
		return kithooks.DeclaredStream{}, err
	}
	cc.Group = group
	if len(cc.Backoff) > 0 {
		// JetStream sets the ack wait to the first back-off step.
		cc.AckWait = cc.Backoff[0]
	}
	f.ev.Notef("no declared stream on this server: a scratch stream %s and consumer %s were created through the client under test with the settings the rules use, and read back from the server", topic, group)
	return kithooks.DeclaredStream{Topic: mq.TopicInfo{Name: topic, Config: cfg}, Consumers: []mq.ConsumerInfo{{Config: cc, AckPolicy: mq.AckExplicit}}}, nil
}

// compareStream reads one declared stream and its consumers and records a
// comparison per setting; it returns the differences. A stream or consumer
// the server does not have is a difference; an error reading it is the
// kit's.
func (f *fixture) compareStream(in mq.Inspector, s kithooks.DeclaredStream) ([]string, error) {
	var diffs []string
	cmp := func(setting, declared, actual string) {
		ok := declared == actual
		f.ev.Compare(verdict.Comparison{Setting: setting, Declared: declared, Actual: actual, Source: "server", Match: ok})
		if !ok {
			diffs = append(diffs, fmt.Sprintf("%s: declared %s, server %s", setting, declared, actual))
		}
	}
	name := s.Topic.Name
	var got mq.TopicInfo
	h := f.rec.Invoke("kit", "stream-info", name)
	got, err := in.Topic(f.ctx, name)
	if errors.Is(err, mq.ErrNotFound) {
		h.OK("not found")
		noun := "stream"
		if s.Noun != "" {
			noun = s.Noun // a RabbitMQ queue, a Kafka topic
		}
		cmp(noun+" "+name, "present", "not found")
		return diffs, nil
	}
	if err != nil {
		h.Fail(oneLine(err.Error()))
		return nil, &setupError{step: "stream-info " + name, err: err}
	}
	h.OK(describeTopic(got.Config))
	dc, gc := s.Topic.Config, got.Config
	p := "stream " + name + " "
	if s.ClientSide {
		// Redis: a stream key holds no window, age or ack wait; what the
		// server holds is compared by its own names (settings.go).
		return f.compareClientSide(in, s, got)
	}
	if len(s.Topic.Subjects) > 0 {
		cmp(p+"subjects", strings.Join(sorted(s.Topic.Subjects), ", "), strings.Join(sorted(got.Subjects), ", "))
	}
	if dc.DedupeWindow > 0 {
		cmp(p+"duplicates (de-dupe window)", dc.DedupeWindow.String(), gc.DedupeWindow.String())
	}
	if dc.Retention != "" {
		cmp(p+"retention", string(dc.Retention), string(gc.Retention))
	}
	cmp(p+"max age", age(dc.MaxAge), age(gc.MaxAge))
	if dc.Storage != "" {
		cmp(p+"storage", string(dc.Storage), string(gc.Storage))
	}
	if dc.Replicas > 0 {
		cmp(p+"replicas", fmt.Sprint(dc.Replicas), fmt.Sprint(max(gc.Replicas, 1)))
	}
	// Everything else the server reports (settings.go).
	diffs = append(diffs, f.compareSettings(p, "stream "+name, s.Topic.Settings, got.Settings)...)
	f.natsStreamHazards(name, got.Settings)
	for _, c := range s.Consumers {
		cname := c.Config.Group
		h := f.rec.Invoke("kit", "consumer-info", name+"/"+cname)
		gotC, err := in.Consumer(f.ctx, name, cname)
		q := "consumer " + name + "/" + cname + " "
		if errors.Is(err, mq.ErrNotFound) {
			h.OK("not found")
			cmp("consumer "+name+"/"+cname, "present", "not found")
			continue
		}
		if err != nil {
			h.Fail(oneLine(err.Error()))
			return nil, &setupError{step: "consumer-info " + name + "/" + cname, err: err}
		}
		h.OK(fmt.Sprintf("ackWait=%s backoff=%s maxDeliver=%d", gotC.Config.AckWait, durations(gotC.Config.Backoff), gotC.Config.MaxDeliver))
		switch {
		case c.AckPolicy != "" && gotC.AckPolicy == "":
			// RabbitMQ: the ack mode is each basic.consume's, not the queue's.
			f.ev.Notef("%s: the server holds no ack policy for it (the ack mode is the consuming client's): not compared", strings.TrimSpace(q))
		case c.AckPolicy != "":
			cmp(q+"ack policy", string(c.AckPolicy), string(gotC.AckPolicy))
		}
		before := len(diffs)
		cmp(q+"ack wait", c.Config.AckWait.String(), gotC.Config.AckWait.String())
		if len(diffs) > before && len(gotC.Config.Backoff) > 0 {
			f.ev.Notef("%s: JetStream sets a consumer's ack wait to its first back-off step when a back-off list is given", strings.TrimSpace(q))
		}
		cmp(q+"back-off", durations(c.Config.Backoff), durations(gotC.Config.Backoff))
		cmp(q+"max deliver", deliveries(c.Config.MaxDeliver), deliveries(gotC.Config.MaxDeliver))
		diffs = append(diffs, f.compareSettings(q, strings.TrimSpace(q), c.Settings, gotC.Settings)...)
		f.natsConsumerHazards(name, cname, gotC.Settings)
	}
	return diffs, nil
}

func describeTopic(c mq.TopicConfig) string {
	return fmt.Sprintf("duplicates=%s retention=%s maxAge=%s storage=%s replicas=%d", c.DedupeWindow, c.Retention, age(c.MaxAge), c.Storage, c.Replicas)
}

func sorted(s []string) []string {
	s = slices.Clone(s)
	sort.Strings(s)
	return s
}

func age(d time.Duration) string {
	if d <= 0 {
		return "unlimited"
	}
	return d.String()
}

func deliveries(n int) string {
	if n <= 0 {
		return "unlimited"
	}
	return fmt.Sprint(n)
}
