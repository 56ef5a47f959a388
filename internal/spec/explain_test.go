package spec

import (
	"errors"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
)

// explain keeps the assertion's description and what came back, and drops
// Gomega's layout, type annotations and error dumps.
func TestExplain(t *testing.T) {
	var msgs []string
	g := NewGomega(func(m string, _ ...int) { msgs = append(msgs, m); panic(softFailure{}) })
	try := func(f func()) {
		defer func() { _ = recover() }()
		f()
	}
	boom := errors.New("boom")
	try(func() { g.Expect(nil).To(HaveOccurred(), "Append through a closed handle must return es.ErrClosed") })
	try(func() { g.Expect(boom).NotTo(HaveOccurred(), "opening a handle") })
	try(func() { g.Expect(boom).To(Succeed(), "closing") })
	try(func() { g.Expect(false).To(BeTrue(), "must match es.ErrConflict, got %v", boom) })
	try(func() { g.Expect([]any{1, "a"}).To(Equal([]any{2, "b"}), "the error carries the ids") })
	try(func() { g.Expect("lost ack of m-1").To(BeEmpty(), "lost ack of m-1 (trial 3)") })
	try(func() {
		g.Expect([]string{"(m-9,v2,notify): effect lost"}).To(BeEmpty(), "after the crash: (m-9,v2,notify): effect lost")
	})
	try(func() {
		g.Eventually(func() int { return 1 }).WithTimeout(10*time.Millisecond).Should(Equal(2), "the count settles")
	})
	want := []string{
		"Append through a closed handle must return es.ErrClosed: got no error",
		`opening a handle: got the error "boom"`,
		`closing: got the error "boom"`,
		"must match es.ErrConflict, got boom",
		`the error carries the ids: got [<int>1, <string>"a"], expected to equal [<int>2, <string>"b"]`,
		"lost ack of m-1 (trial 3)",
		"after the crash: (m-9,v2,notify): effect lost",                   // no "got [..., expected to be empty"
		"the count settles: got 1, expected to equal 2 (timed out after ", // the time a loaded machine took
	}
	if len(msgs) != len(want) {
		t.Fatalf("%d messages, want %d", len(msgs), len(want))
	}
	for i, m := range msgs {
		got := explain(m)
		if got != want[i] && !(strings.HasSuffix(want[i], "after ") && strings.HasPrefix(got, want[i])) {
			t.Errorf("explain(%q)\n got %q\nwant %q", m, got, want[i])
		}
		if strings.Contains(got, "\n") || strings.Contains(got, "0x") {
			t.Errorf("explain left layout in: %q", got)
		}
	}
}

// Under both drivers a rule whose checks (R.Check) fail names every one,
// numbered, and goes on after each; an assertion outside Check still ends
// the rule there, the earlier failed checks kept.
func TestEveryFailedCheckIsListed(t *testing.T) {
	s := New("eventstore")
	after := false
	s.It("ES-1.1", func(r *R) {
		r.Check(func() { r.Expect(1).To(Equal(2), "first") })
		r.Check(func() { r.Expect(true).To(BeTrue(), "holds") })
		r.Check(func() { r.Expect(nil).To(HaveOccurred(), "second must fail") })
		after = true
	})
	s.It("ES-1.2", func(r *R) {
		r.Check(func() { r.Expect(1).To(Equal(2), "first") })
		r.Expect(3).To(Equal(4), "hard")
		t.Error("ran past a failed assertion outside Check")
	})
	runWant(t, s, map[string]want{
		"ES-1.1": {"fail", "2 checks failed: (1) first: got 1, expected to equal 2; (2) second must fail: got no error"},
		"ES-1.2": {"fail", "2 checks failed: (1) first: got 1, expected to equal 2; (2) hard: got 3, expected to equal 4"},
	})
	if !after {
		t.Error("the body stopped at a failed check")
	}
}

// A long rule's progress is printed while it runs, the latest of what it
// said, through the sink when one is set (the CLI's runner).
func TestProgressLines(t *testing.T) {
	saved, savedEvery := ProgressAfter, ProgressEvery
	ProgressAfter, ProgressEvery = 20*time.Millisecond, 20*time.Millisecond
	defer func() { ProgressAfter, ProgressEvery = saved, savedEvery }()
	lines := make(chan string, 100)
	defer ProgressTo(func(l string) { lines <- l })()
	s := New("eventstore")
	s.It("ES-1.1", func(r *R) {
		for i := 1; i <= 5; i++ {
			r.Progress(i*10, 50, "steps")
			time.Sleep(15 * time.Millisecond)
		}
	})
	runWant(t, s, map[string]want{"ES-1.1": {"pass", ""}})
	close(lines)
	var got []string
	for l := range lines {
		got = append(got, l)
	}
	if len(got) == 0 || !strings.HasPrefix(got[0], "ES-1.1: ") || !strings.Contains(got[len(got)-1], "of 50 steps done") {
		t.Errorf("progress lines: %q", got)
	}
}
