package registry

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/onceproof/tck/adapters/broker/nats"
	"github.com/onceproof/tck/internal/kithooks"
	"github.com/onceproof/tck/internal/profile"
	"github.com/onceproof/tck/internal/target"
	"github.com/onceproof/tck/mq"
)

// DefaultMaxWait is how long a rule may wait by definition in a run with a
// profile unless --max-wait says otherwise.
const DefaultMaxWait = 10 * time.Minute

// DeclaredNATS is what a profile declares for a NATS target: the streams
// and consumers of its one NATS broker, every setting the profile leaves
// out filled with the NATS default (so it is compared too). onServer says
// the streams live on the target's server (a URL: the team's own). A
// profile with no NATS stream, or with several NATS brokers (which of them
// is this server?), is refused.
func DeclaredNATS(p *profile.Profile, onServer bool) (*kithooks.Declared, error) {
	var nb []profile.Broker
	for _, b := range p.Brokers {
		if b.Kind == profile.KindNATS {
			nb = append(nb, b)
		}
	}
	switch {
	case len(nb) == 0 || len(nb[0].Streams) == 0:
		return nil, fmt.Errorf("profile %s declares no NATS stream to certify on a broker/nats target", p.File())
	case len(nb) > 1:
		var names []string
		for _, b := range nb {
			names = append(names, b.Name)
		}
		return nil, fmt.Errorf("profile %s declares %d NATS brokers (%s); a run certifies one server: keep one NATS broker in the profile", p.File(), len(nb), strings.Join(names, ", "))
	}
	d := &kithooks.Declared{Source: fmt.Sprintf("%s (profile %s, broker %s)", p.File(), p.Name, nb[0].Name), OnServer: onServer, Workers: natsWorkers(p, nb[0])}
	if b := nb[0]; onServer && (b.NATS != nil || b.Durability != nil) {
		// The sync settings, compared where the server tells them (the
		// system account's VARZ, or /varz at nats.monitoringUrl); only
		// the team's server, never the kit's own.
		interval, always := b.NATS.Sync()
		d.Server = map[string]string{"sync_always": fmt.Sprint(always)}
		if !always {
			d.Server["sync_interval"] = interval.String()
		}
	}
	for _, pr := range p.Producers {
		if pr.Broker == nb[0].Name {
			d.Producers = append(d.Producers, kithooks.DeclaredProducer{Name: pr.Name, Stream: pr.Stream, KeepsID: pr.KeepsMessageID, Subject: pr.Subject})
		}
	}
	for _, s := range nb[0].Streams {
		ds := kithooks.DeclaredStream{Topic: mq.TopicInfo{Name: s.Name, Subjects: s.Subjects, Config: mq.TopicConfig{
			DedupeWindow: profile.NATSDuplicates(s.Duplicates.D(), s.MaxAge.D()), // the server's: min(2m, maxAge) when unset
			Retention:    mq.Retention(orS(string(s.Retention), string(profile.RetentionLimits))),
			MaxAge:       s.MaxAge.D(),
			Storage:      mq.Storage(orS(string(s.Storage), string(profile.StorageFile))),
			Replicas:     max(s.Replicas, 1),
		}, Settings: natsStreamSettings(s)}}
		if ds.Topic.Config.Retention != mq.Limits {
			d.SetupHazards = append(d.SetupHazards, fmt.Sprintf("stream %s declares %s retention: the rules choose their scratch topics' retention (limits; BR-2.8 also work-queue), so it is compared with the server (BR-6.1), not exercised by every rule", s.Name, ds.Topic.Config.Retention))
		}
		for _, c := range s.Consumers {
			var backoff []time.Duration
			for _, b := range c.Backoff {
				backoff = append(backoff, b.D())
			}
			ackWait := c.AckWait.D()
			if ackWait == 0 {
				ackWait = profile.NATSDefaultAckWait
				if len(backoff) > 0 {
					ackWait = backoff[0] // what JetStream sets with a back-off list
				}
			}
			ci := mq.ConsumerInfo{
				Config:    mq.ConsumerConfig{Group: c.Name, AckWait: ackWait, Backoff: backoff, MaxDeliver: c.MaxDeliver},
				AckPolicy: mq.AckPolicy(orS(string(c.AckPolicy), string(profile.AckExplicit))),
				Settings:  natsConsumerSettings(c),
			}
			if ci.Config.MaxDeliver < 0 {
				ci.Config.MaxDeliver = 0
			}
			if ci.AckPolicy != mq.AckExplicit {
				d.SetupHazards = append(d.SetupHazards, fmt.Sprintf("consumer %s/%s declares ack policy %s: the kit's consumers ack explicitly, so it is compared with the server (BR-6.1), not exercised", s.Name, c.Name, ci.AckPolicy))
			}
			ds.Consumers = append(ds.Consumers, ci)
		}
		d.Streams = append(d.Streams, ds)
	}
	return d, nil
}

// natsMonitoring is the monitoring URL of the profile's NATS broker.
func natsMonitoring(p *profile.Profile) string {
	for _, b := range p.Brokers {
		if b.Kind == profile.KindNATS && b.NATS != nil {
			return b.NATS.MonitoringURL
		}
	}
	return ""
}

func orS(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// bindProfile applies the run's profile, limit and progress to a NATS
// target: the declared streams, the team's declared settings as the
// target's configuration, and the server's version and settings as read.
func bindProfile(ctx context.Context, nt *nats.Target, ref target.Ref, t *BrokerBinding, info *target.Info) error {
	t.Progress = ref.Opts.Progress
	if ref.Opts.MaxWait > 0 {
		t.Budget = ref.Opts.MaxWait
	}
	monitoring := ""
	if ref.Opts.Profile != nil && ref.Mode() == target.External {
		monitoring = natsMonitoring(ref.Opts.Profile) // the team's server only
	}
	info.Server = serverSettings(ctx, nt, monitoring)
	if v := info.Server["version"]; v != "" && ref.Mode() == target.External {
		// A server the kit did not start: its version as it announced it.
		info.Version = v + " (as the server announced it), " + nt.Version
	}
	p := ref.Opts.Profile
	if p == nil {
		info.Notes = append(info.Notes, "the configuration shown is the kit's own test settings for its scratch streams (short windows so a run takes seconds), not a team's; tck run --profile FILE certifies a declared one")
		return nil
	}
	d, err := DeclaredNATS(p, ref.Mode() == target.External)
	if err != nil {
		return err
	}
	t.Declared = d
	if ref.Opts.MaxWait <= 0 {
		t.Budget = DefaultMaxWait
	}
	if u := natsMonitoring(p); u != "" && d.OnServer {
		inspect := t.Inspect
		t.Inspect = func(ctx context.Context) (mq.Inspector, error) {
			in, err := inspect(ctx)
			if ni, ok := in.(*nats.Inspector); ok {
				ni.Monitoring = u
			}
			return in, err
		}
	}
	// The declared configuration is the team's, not the kit's scratch
	// settings; what the kit adds of its own is a note.
	info.Config = declaredConfig(d)
	w := kithooks.DefaultWindows()
	info.Notes = append(info.Notes, fmt.Sprintf("the kit's own test settings: tolerance %s, nak delay %s (BR-2.4), %d messages (BR-2.9); the rules' waits at the declared durations are bounded by %s (--max-wait)",
		w.Tolerance, w.NakDelay, w.Messages, t.Budget))
	if !d.OnServer {
		info.Notes = append(info.Notes, "the server is the kit's own, not the team's: the declared streams are not on it, so BR-6.1 checks a scratch copy; certify the team's server with --target broker/nats=nats://HOST:PORT")
	}
	return nil
}

// declaredConfig is the declaration as the report's configuration.
func declaredConfig(d *kithooks.Declared) map[string]string {
	cfg := map[string]string{"profile": d.Source}
	for k, v := range d.Server {
		cfg["declared "+k] = v
	}
	for _, s := range d.Streams {
		c := s.Topic.Config
		age := "unlimited"
		if c.MaxAge > 0 {
			age = c.MaxAge.String()
		}
		cfg["stream "+s.Topic.Name] = fmt.Sprintf("subjects %s, duplicates %s, retention %s, max age %s, storage %s, replicas %d",
			orS(strings.Join(s.Topic.Subjects, " "), "(not declared)"), c.DedupeWindow, c.Retention, age, c.Storage, c.Replicas) + settingsText(s.Topic.Settings)
		for _, ci := range s.Consumers {
			md := "unlimited"
			if ci.Config.MaxDeliver > 0 {
				md = fmt.Sprint(ci.Config.MaxDeliver)
			}
			bo := "none"
			if len(ci.Config.Backoff) > 0 {
				var parts []string
				for _, b := range ci.Config.Backoff {
					parts = append(parts, b.String())
				}
				bo = strings.Join(parts, ", ")
			}
			cfg["consumer "+s.Topic.Name+"/"+ci.Config.Group] = fmt.Sprintf("ack policy %s, ack wait %s, back-off %s, max deliver %s",
				ci.AckPolicy, ci.Config.AckWait, bo, md) + settingsText(ci.Settings)
		}
	}
	return cfg
}

// serverSettings reads the server's version and settings through a
// read-only connection (and the monitoring endpoint's /varz when given);
// what the kit knows of a server it started itself is added as such.
func serverSettings(ctx context.Context, nt *nats.Target, monitoring string) map[string]string {
	out := map[string]string{}
	cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	in, err := nats.Inspect(cctx, nt.URL, nt.Client.Options)
	if err != nil {
		out["read"] = "not read: " + target.Redact(err.Error())
		return out
	}
	defer in.Close()
	in.Monitoring = monitoring
	si, err := in.Server(cctx)
	if err != nil {
		out["read"] = "not read: " + target.Redact(err.Error())
		return out
	}
	out["version"] = si.Version
	for k, v := range si.Settings {
		out[k] = v
	}
	if s, ok := nt.Config["sync"]; ok && strings.HasPrefix(out["sync"], nats.NotReadable) {
		out["sync"] = s + " (the kit's own server, as the kit started it)"
	}
	return out
}
