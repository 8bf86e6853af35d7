// Package expansion expands the $(NAME) references of a container's
// command, args, env values and subPathExpr, following the API's rules, as
// the kubelet's third_party/forked/golang/expansion does.
package expansion

import "strings"

// Expand rewrites the $(NAME) references of input with mapping: $$ is a
// literal $ (so $$(NAME) stays $(NAME)), a $ that starts no reference is
// kept, and an unterminated reference is plain text.
func Expand(input string, mapping func(name string) string) string {
	if !strings.Contains(input, "$") {
		return input
	}
	var out strings.Builder
	for i := 0; i < len(input); i++ {
		if input[i] != '$' || i+1 == len(input) {
			out.WriteByte(input[i])
			continue
		}
		switch input[i+1] {
		case '$':
			out.WriteByte('$')
			i++
		case '(':
			end := strings.IndexByte(input[i+2:], ')')
			if end < 0 {
				// An unterminated reference is plain text.
				out.WriteString("$(")
				i++
				continue
			}
			out.WriteString(mapping(input[i+2 : i+2+end]))
			i += 2 + end
		default:
			out.WriteByte('$')
		}
	}
	return out.String()
}

// MappingFuncFor maps each name to its value in values; a reference to an
// unknown name is left as written.
func MappingFuncFor(values map[string]string) func(name string) string {
	return func(name string) string {
		if value, ok := values[name]; ok {
			return value
		}
		return "$(" + name + ")"
	}
}
