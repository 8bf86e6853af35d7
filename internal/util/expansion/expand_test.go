package expansion

import "testing"

func TestExpand(t *testing.T) {
	values := map[string]string{"A": "1", "B": "two", "EMPTY": ""}
	tests := map[string]struct {
		input string
		want  string
	}{
		"no reference":                         {input: "plain text", want: "plain text"},
		"a known reference":                    {input: "x$(A)y", want: "x1y"},
		"references side by side":              {input: "$(A)$(B)", want: "1two"},
		"an empty value":                       {input: "[$(EMPTY)]", want: "[]"},
		"an unknown reference is kept":         {input: "$(C) and $(A)", want: "$(C) and 1"},
		"$$ escapes a reference":               {input: "$$(A)", want: "$(A)"},
		"$$$ is a literal $ then a reference":  {input: "$$$(A)", want: "$1"},
		"$$ alone is one $":                    {input: "cost: $$5", want: "cost: $5"},
		"a $ that starts nothing is kept":      {input: "$A ${B} $", want: "$A ${B} $"},
		"an unterminated reference is text":    {input: "$(A", want: "$(A"},
		"an unterminated then a closed one":    {input: "$(A $(B)", want: "$(A $(B)"},
		"an empty name is kept":                {input: "$()", want: "$()"},
		"a $ before a multi-byte rune is kept": {input: "$é$(A)", want: "$é1"},
		"a reference at the very end":          {input: "v=$(B)", want: "v=two"},
		"the shell's own syntax is left to it": {input: "echo ${HOME} $(A)", want: "echo ${HOME} 1"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := Expand(tc.input, MappingFuncFor(values)); got != tc.want {
				t.Errorf("Expand(%q) = %q, want %q", tc.input, got, tc.want)
			}
		})
	}
}
