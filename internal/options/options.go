// Package options is nodelet's command line, as the kubelet's
// cmd/kubelet/app/options: the flags, bound straight onto the
// configuration file's fields (config.nodelet.dev/v1alpha1
// NodeletConfiguration) and onto Flags, the few that are flags alone;
// reading them in order, defaults, then the --config file, then the flags
// given; the configuration reference generated from them; and the
// settings as the option structs of the parts nodelet wires together.
//
// A field's flag is named in its `flag` tag and described by its doc
// comment, so a setting is written once: TestEverySettingIsWrittenOnce
// tells what adding one takes.
package options

import (
	_ "embed" // the source of flags.go, for the flags' descriptions
	"flag"
	"fmt"
	"io"

	"github.com/spf13/pflag"

	configv1alpha1 "github.com/nodelet/nodelet/api/config/v1alpha1"
	"github.com/nodelet/nodelet/internal/util/fielddoc"
)

// NodeletServer is what nodelet runs with: the flags alone and the
// configuration, the file's and the flags' together, as the kubelet's
// KubeletServer. Parse sets every field, the configuration's pointers
// included.
type NodeletServer struct {
	Flags
	configv1alpha1.NodeletConfiguration

	// given are the flags given on the command line, the logger's too.
	given map[string]bool
}

// Changed is whether a flag was given on the command line.
func (s *NodeletServer) Changed(flag string) bool { return s.given[flag] }

// flagsSource is flags.go: its doc comments describe the flags alone.
//
//go:embed flags.go
var flagsSource []byte

// Parse reads nodelet's settings as the kubelet does: the defaults, the
// --config file over them, then the flags given on the command line over
// both, with goFlags (the logger's) parsed among them. The result is
// validated.
func Parse(args []string, goFlags *flag.FlagSet) (*NodeletServer, error) {
	s := &NodeletServer{Flags: NewFlags()}

	// First pass: find --config and --config-dir without failing on the
	// other flags.
	pre := pflag.NewFlagSet("nodelet", pflag.ContinueOnError)
	pre.ParseErrorsAllowlist.UnknownFlags = true
	pre.StringVar(&s.Config, "config", "", "")
	pre.StringVar(&s.ConfigDir, "config-dir", "", "")
	pre.Usage = func() {}
	pre.SetOutput(io.Discard)
	_ = pre.Parse(args)
	if s.Config != "" || s.ConfigDir != "" {
		config, kubelet, err := readConfigFiles(s.Config, s.ConfigDir)
		if err != nil {
			return nil, err
		}
		s.NodeletConfiguration = *config
		if kubelet {
			kubeletDefaults(&s.NodeletConfiguration)
		}
	}
	configv1alpha1.SetDefaults(&s.NodeletConfiguration)

	fs, err := s.flagSet()
	if err != nil {
		return nil, err
	}
	if goFlags != nil {
		fs.AddGoFlagSet(goFlags)
	}
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	s.given = map[string]bool{}
	fs.Visit(func(f *pflag.Flag) { s.given[f.Name] = true })
	// --version needs no other setting to be right, as the kubelet's.
	if s.Version == "true" {
		return s, nil
	}
	s.applyKubeletFlags(s.Changed("node-name"))
	return s, s.Validate()
}

// flagSet binds every flag onto s: its values now are the flags' defaults.
func (s *NodeletServer) flagSet() (*pflag.FlagSet, error) {
	flagsAlone, config, err := s.settings()
	if err != nil {
		return nil, err
	}
	fs := pflag.NewFlagSet("nodelet", pflag.ContinueOnError)
	if err := bindFlags(fs, append(flagsAlone, config...)); err != nil {
		return nil, err
	}
	// --version alone prints the version, as the kubelet's.
	fs.Lookup("version").NoOptDefVal = "true"
	return fs, nil
}

// settings are s's settings, the flags alone and the configuration's,
// each with its doc comment.
func (s *NodeletServer) settings() (flagsAlone, config []setting, err error) {
	flagDocs, err := fielddoc.Parse(flagsSource, "Flags")
	if err != nil {
		return nil, nil, err
	}
	configDocs, err := configv1alpha1.FieldDocs()
	if err != nil {
		return nil, nil, err
	}
	return settings(&s.Flags, flagDocs), settings(&s.NodeletConfiguration, configDocs), nil
}

// Validate checks the settings: the node's identity, then the
// configuration, whose errors name the file's fields, then the companion's
// flags, which depend on it.
func (s *NodeletServer) Validate() error {
	if err := s.Flags.validate(); err != nil {
		return err
	}
	if err := s.Flags.validateKubeletFlags(); err != nil {
		return err
	}
	if errs := configv1alpha1.Validate(&s.NodeletConfiguration); len(errs) > 0 {
		return fmt.Errorf("invalid configuration: %w", errs.ToAggregate())
	}
	return s.validateCompanion(&s.NodeletConfiguration)
}
