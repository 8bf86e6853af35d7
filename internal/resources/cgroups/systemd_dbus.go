package cgroups

// The systemd driver's edge: slices made, changed and stopped through
// systemd's manager over D-Bus (its private socket when root, as runc and
// the kubelet reach it), behind the Systemd interface the Manager's tests
// fake.

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	sddbus "github.com/coreos/go-systemd/v22/dbus"
	godbus "github.com/godbus/dbus/v5"
)

// Systemd is what the systemd driver asks of systemd. Each call waits for
// its job to finish.
type Systemd interface {
	// StartSlice makes the transient slice unit with props; a unit of
	// that name already loaded and active is not an error.
	StartSlice(ctx context.Context, unit string, props []UnitProperty) error
	// SetProperties changes a unit's properties at runtime.
	SetProperties(ctx context.Context, unit string, props []UnitProperty) error
	// StopUnit stops a unit and what runs in it; a unit systemd does not
	// know is not an error.
	StopUnit(ctx context.Context, unit string) error
}

// How long a call to systemd may take: making or stopping an empty slice
// takes milliseconds; stopping one whose processes ignore SIGTERM waits
// for systemd to kill them.
const (
	systemdCallTimeout = 30 * time.Second
)

// dbusSystemd is Systemd over a go-systemd connection, made again once if
// systemd closed it (systemd restarted, say).
type dbusSystemd struct {
	mu   sync.Mutex
	conn *sddbus.Conn
}

// ConnectSystemd connects to the systemd of the machine (its private
// socket, /run/systemd/private, when root; its system bus otherwise).
func ConnectSystemd() (Systemd, error) {
	conn, err := dial()
	if err != nil {
		return nil, fmt.Errorf("connecting to systemd over D-Bus (the systemd cgroup driver needs it): %w", err)
	}
	return &dbusSystemd{conn: conn}, nil
}

// dial connects for as long as nodelet runs: the D-Bus library closes a
// connection when the context it was made with is done, so the calls'
// deadlines are theirs alone.
func dial() (*sddbus.Conn, error) {
	return sddbus.NewWithContext(context.Background())
}

func (s *dbusSystemd) connection() (*sddbus.Conn, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.conn != nil && s.conn.Connected() {
		return s.conn, nil
	}
	if s.conn != nil {
		s.conn.Close()
	}
	conn, err := dial()
	if err != nil {
		return nil, fmt.Errorf("connecting to systemd over D-Bus again: %w", err)
	}
	s.conn = conn
	return conn, nil
}

func (s *dbusSystemd) StartSlice(ctx context.Context, unit string, props []UnitProperty) error {
	conn, err := s.connection()
	if err != nil {
		return err
	}
	done := make(chan string, 1)
	if _, err := conn.StartTransientUnitContext(ctx, unit, "replace", toDBus(props), done); err != nil {
		if isDBusError(err, "org.freedesktop.systemd1.UnitExists") {
			return nil
		}
		return fmt.Errorf("starting unit %s: %w", unit, err)
	}
	return waitJob(ctx, "starting", unit, done)
}

func (s *dbusSystemd) SetProperties(ctx context.Context, unit string, props []UnitProperty) error {
	conn, err := s.connection()
	if err != nil {
		return err
	}
	if err := conn.SetUnitPropertiesContext(ctx, unit, true, toDBus(props)...); err != nil {
		return fmt.Errorf("setting properties of unit %s: %w", unit, err)
	}
	return nil
}

func (s *dbusSystemd) StopUnit(ctx context.Context, unit string) error {
	conn, err := s.connection()
	if err != nil {
		return err
	}
	done := make(chan string, 1)
	if _, err := conn.StopUnitContext(ctx, unit, "replace", done); err != nil {
		if isDBusError(err, "org.freedesktop.systemd1.NoSuchUnit") {
			return nil
		}
		return fmt.Errorf("stopping unit %s: %w", unit, err)
	}
	return waitJob(ctx, "stopping", unit, done)
}

// waitJob waits for a job's result: "done" is success.
func waitJob(ctx context.Context, what, unit string, done <-chan string) error {
	select {
	case result := <-done:
		if result != "done" {
			return fmt.Errorf("%s unit %s: job ended %q", what, unit, result)
		}
		return nil
	case <-ctx.Done():
		return fmt.Errorf("%s unit %s: %w", what, unit, ctx.Err())
	}
}

func isDBusError(err error, name string) bool {
	var dbusErr godbus.Error
	return errors.As(err, &dbusErr) && dbusErr.Name == name
}

func toDBus(props []UnitProperty) []sddbus.Property {
	out := make([]sddbus.Property, len(props))
	for i, p := range props {
		out[i] = sddbus.Property{Name: p.Name, Value: godbus.MakeVariant(p.Value)}
	}
	return out
}
