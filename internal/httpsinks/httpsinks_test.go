package httpsinks

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"testing"

	"github.com/onsi/gomega"

	"github.com/onceproof/tck/co"
)

func call(t *testing.T, method, url string, body any) (int, map[string]any, error) {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, url, rd)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	var m map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&m)
	return resp.StatusCode, m, nil
}

func TestIndexAndNotifier(t *testing.T) {
	g := gomega.NewWithT(t)
	s, err := Start()
	g.Expect(err).NotTo(gomega.HaveOccurred())
	defer s.Close()
	base := s.Base("W1")
	put := func(id string, v int, external bool) int {
		u := base + "/index/docs/" + id
		if external {
			u += fmt.Sprintf("?version=%d&version_type=external", v)
		}
		st, _, err := call(t, http.MethodPut, u, map[string]any{"version": v, "body": fmt.Sprintf("%s v%d", id, v)})
		g.Expect(err).NotTo(gomega.HaveOccurred())
		return st
	}
	g.Expect(put("m-9", 2, true)).To(gomega.Equal(200))
	g.Expect(put("m-9", 1, true)).To(gomega.Equal(409), "an older external version is refused")
	g.Expect(put("m-9", 2, true)).To(gomega.Equal(409), "the same external version is refused")
	g.Expect(put("m-9", 3, true)).To(gomega.Equal(200))
	g.Expect(put("m-9", 1, false)).To(gomega.Equal(200), "an unconditional write overwrites")
	g.Expect(put("m-9", 1, false)).To(gomega.Equal(200), "the same write again is a no-op")
	st, doc, err := call(t, http.MethodGet, base+"/index/docs/m-9", nil)
	g.Expect(err).NotTo(gomega.HaveOccurred())
	g.Expect(st).To(gomega.Equal(200))
	g.Expect(doc["version"]).To(gomega.BeEquivalentTo(1))
	st, _, _ = call(t, http.MethodGet, base+"/index/docs/nope", nil)
	g.Expect(st).To(gomega.Equal(404))

	for range 2 {
		st, _, err = call(t, http.MethodPost, s.Base("W2")+"/notify", co.Notification{MessageID: "m-9", Version: 1, Text: "hi"})
		g.Expect(err).NotTo(gomega.HaveOccurred())
		g.Expect(st).To(gomega.Equal(202))
	}
	_, n, _ := call(t, http.MethodGet, base+"/notify/count?messageId=m-9&version=1", nil)
	g.Expect(n["count"]).To(gomega.BeEquivalentTo(2), "every notification counts")

	g.Expect(s.Docs()).To(gomega.Equal(map[string]co.Doc{"m-9": {ID: "m-9", Version: 1, Body: "m-9 v1"}}))
	var scopes []string
	for _, e := range s.Effects() {
		scopes = append(scopes, fmt.Sprintf("%s v%d %s", e.MessageID, e.Version, e.Scope))
	}
	g.Expect(scopes).To(gomega.Equal([]string{"m-9 v2 search-index", "m-9 v3 search-index", "m-9 v1 search-index", "m-9 v1 notify", "m-9 v1 notify"}))
	calls := s.Calls()
	g.Expect(calls).To(gomega.HaveLen(11))
	g.Expect(calls[1]).To(gomega.And(
		gomega.HaveField("Kind", KindIndexPutV), gomega.HaveField("Status", 409), gomega.HaveField("Client", "W1")))
	g.Expect(calls[8]).To(gomega.And(gomega.HaveField("Kind", KindNotify), gomega.HaveField("Client", "W2")))
}

func TestHooks(t *testing.T) {
	g := gomega.NewWithT(t)
	s, err := Start()
	g.Expect(err).NotTo(gomega.HaveOccurred())
	defer s.Close()
	var seen []string
	s.SetHook(func(c Call, st Stage) Action {
		seen = append(seen, fmt.Sprintf("%s %s %s", c.MessageID, c.Kind, st))
		switch {
		case c.MessageID == "fail" && st == BeforeApply:
			return FailCall
		case c.MessageID == "lose" && st == AfterApply:
			return DropAnswer
		case c.MessageID == "kill" && st == BeforeApply:
			return DropAnswer
		}
		return Proceed
	})
	n := func(m string) (int, error) {
		st, _, err := call(t, http.MethodPost, s.Base("W1")+"/notify", co.Notification{MessageID: m, Version: 1})
		return st, err
	}
	st, err := n("fail")
	g.Expect(err).NotTo(gomega.HaveOccurred())
	g.Expect(st).To(gomega.Equal(503))
	_, err = n("lose")
	g.Expect(err).To(gomega.HaveOccurred(), "the answer was lost")
	_, err = n("kill")
	g.Expect(err).To(gomega.HaveOccurred())
	var got []string
	for _, e := range s.Effects() {
		got = append(got, e.MessageID)
	}
	g.Expect(got).To(gomega.Equal([]string{"lose"}), "a failed call and one dropped before applying took no effect; a lost answer did")
	g.Expect(seen).To(gomega.ContainElements("fail notify before-apply", "lose notify after-apply"))
	calls := s.Calls()
	g.Expect(calls[0].Outcome).To(gomega.ContainSubstring("failed by the kit"))
	g.Expect(calls[1].Outcome).To(gomega.Equal("applied, answer lost"))
	g.Expect(calls[2].Outcome).To(gomega.ContainSubstring("dropped before"))
}
