package criproxy

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/grpc/codes"
)

func TestDecide(t *testing.T) {
	const run = "/runtime.v1.RuntimeService/RunPodSandbox"
	always := Rule{ErrorRate: 1, Codes: []codes.Code{codes.Unavailable}, DelayRate: 1, MaxDelay: time.Second, DropRate: 1}
	tests := map[string]struct {
		rules      []Rule
		method     string
		wantFault  bool
		wantStream bool
	}{
		"no rule: no fault":                        {method: run},
		"a rule for another method: no fault":      {rules: []Rule{named(always, "StopPodSandbox")}, method: run},
		"a rule by short name":                     {rules: []Rule{named(always, "RunPodSandbox")}, method: run, wantFault: true},
		"a rule by full name":                      {rules: []Rule{named(always, run)}, method: run, wantFault: true},
		"a rule by service":                        {rules: []Rule{named(always, "runtime.v1.RuntimeService")}, method: run, wantFault: true},
		"a rule for every method":                  {rules: []Rule{named(always, "*")}, method: run, wantFault: true},
		"the first rule that matches wins":         {rules: []Rule{{Method: "RunPodSandbox"}, named(always, "*")}, method: run},
		"a rule of another service does not match": {rules: []Rule{named(always, "runtime.v1.ImageService")}, method: run},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			action := Decide(tc.rules, tc.method, rand.New(rand.NewPCG(1, 2)))
			faulty := action.Code != codes.OK && action.Delay > 0 && action.Drop
			if faulty != tc.wantFault || (!tc.wantFault && action != Action{}) {
				t.Errorf("Decide() = %+v, want a fault of every kind: %v", action, tc.wantFault)
			}
		})
	}
}

func named(rule Rule, method string) Rule {
	rule.Method = method
	return rule
}

// One seed gives one sequence of decisions, whatever the rules: the draws
// do not depend on the rates.
func TestDecideIsReproducibleFromTheSeed(t *testing.T) {
	rules := []Rule{{Method: "*", ErrorRate: 0.3, DelayRate: 0.2, MaxDelay: time.Second, DropRate: 0.1}}
	sequence := func(seed uint64) []Action {
		rng := rand.New(rand.NewPCG(seed, 0))
		var actions []Action
		for range 200 {
			actions = append(actions, Decide(rules, "/runtime.v1.RuntimeService/StartContainer", rng))
		}
		return actions
	}
	if diff := cmp.Diff(sequence(42), sequence(42)); diff != "" {
		t.Errorf("two runs with seed 42 differ (-first +second):\n%s", diff)
	}
	if cmp.Equal(sequence(42), sequence(43)) {
		t.Error("seeds 42 and 43 gave the same 200 decisions")
	}
	var errors, delays int
	for _, action := range sequence(42) {
		if action.Code != codes.OK {
			errors++
		}
		if action.Delay > 0 {
			delays++
		}
	}
	// 200 draws at 0.3 and 0.2: far outside these bounds only if the
	// rates are not applied.
	if errors < 30 || errors > 90 || delays < 15 || delays > 70 {
		t.Errorf("200 calls at rates 0.3 and 0.2 gave %d errors and %d delays", errors, delays)
	}
}
