package shutdown

// The edge: systemd-logind and systemd over the system D-Bus, behind the
// Logind interface the manager's tests fake.

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	godbus "github.com/godbus/dbus/v5"
)

// Logind is what the shutdown manager asks of systemd-logind.
type Logind interface {
	// InhibitDelayMax is logind's InhibitDelayMaxUSec: how long a delay
	// lock may hold a shutdown back.
	InhibitDelayMax() (time.Duration, error)
	// OverrideInhibitDelay writes the logind drop-in that raises
	// InhibitDelayMaxSec to d; ReloadConf has logind read it.
	OverrideInhibitDelay(d time.Duration) error
	ReloadConf() error
	// Inhibit takes a delay lock on shutdown; closing it lets the
	// shutdown go on.
	Inhibit() (*os.File, error)
	// WatchShutdown sends PrepareForShutdown's argument: true when a
	// shutdown starts, false when it is cancelled. The channel is closed
	// when the connection ends or ctx does.
	WatchShutdown(ctx context.Context) (<-chan bool, error)
	// Close ends the connection.
	Close() error
}

const (
	logindService   = "org.freedesktop.login1"
	logindObject    = godbus.ObjectPath("/org/freedesktop/login1")
	logindInterface = "org.freedesktop.login1.Manager"
	systemdService  = "org.freedesktop.systemd1"
	systemdObject   = godbus.ObjectPath("/org/freedesktop/systemd1")
)

// The lock's who and why, as `systemd-inhibit --list` shows them: the
// kubelet's words, with nodelet's name as the one who holds it.
const (
	inhibitWho = "nodelet"
	inhibitWhy = "nodelet needs time to handle node shutdown"
)

// LogindConfDir and logindDropIn are the kubelet's drop-in: a node runs
// one agent, so nodelet writes the same file, and one that went from the
// kubelet to nodelet (or back) keeps one setting, not two.
const (
	LogindConfDir = "/etc/systemd/logind.conf.d"
	logindDropIn  = "99-kubelet.conf"
)

// dbusLogind is Logind over a private connection to the system bus.
type dbusLogind struct {
	conn    *godbus.Conn
	confDir string
}

// ConnectLogind connects to the system bus and checks that logind is on
// it; confDir is where the drop-in goes (LogindConfDir).
func ConnectLogind(confDir string) (Logind, error) {
	conn, err := godbus.ConnectSystemBus()
	if err != nil {
		return nil, fmt.Errorf("connecting to the system D-Bus: %w", err)
	}
	l := &dbusLogind{conn: conn, confDir: confDir}
	if _, err := l.InhibitDelayMax(); err != nil {
		conn.Close()
		return nil, err
	}
	return l, nil
}

func (l *dbusLogind) logind() godbus.BusObject { return l.conn.Object(logindService, logindObject) }

func (l *dbusLogind) InhibitDelayMax() (time.Duration, error) {
	v, err := l.logind().GetProperty(logindInterface + ".InhibitDelayMaxUSec")
	if err != nil {
		return 0, fmt.Errorf("reading InhibitDelayMaxUSec from systemd-logind: %w", err)
	}
	usec, ok := v.Value().(uint64)
	if !ok {
		return 0, fmt.Errorf("InhibitDelayMaxUSec from systemd-logind is a %T, not a uint64", v.Value())
	}
	return time.Duration(usec) * time.Microsecond, nil
}

func (l *dbusLogind) OverrideInhibitDelay(d time.Duration) error {
	if err := os.MkdirAll(l.confDir, 0o755); err != nil {
		return fmt.Errorf("making %s: %w", l.confDir, err)
	}
	path := filepath.Join(l.confDir, logindDropIn)
	conf := fmt.Sprintf("# Written by nodelet for its graceful node shutdown (shutdownGracePeriod)\n[Login]\nInhibitDelayMaxSec=%.0f\n", d.Seconds())
	if err := os.WriteFile(path, []byte(conf), 0o644); err != nil {
		return fmt.Errorf("writing the logind drop-in %s: %w", path, err)
	}
	return nil
}

// ReloadConf sends logind SIGHUP through systemd, as the kubelet does:
// logind reads its configuration again.
func (l *dbusLogind) ReloadConf() error {
	call := l.conn.Object(systemdService, systemdObject).Call("org.freedesktop.systemd1.Manager.KillUnit", 0, "systemd-logind.service", "all", int32(1))
	if call.Err != nil {
		return fmt.Errorf("reloading the systemd-logind configuration: %w", call.Err)
	}
	return nil
}

func (l *dbusLogind) Inhibit() (*os.File, error) {
	call := l.logind().Call(logindInterface+".Inhibit", 0, "shutdown", inhibitWho, inhibitWhy, "delay")
	if call.Err != nil {
		return nil, fmt.Errorf("taking a systemd-logind delay lock on shutdown: %w", call.Err)
	}
	var fd godbus.UnixFD
	if err := call.Store(&fd); err != nil {
		return nil, fmt.Errorf("reading the systemd-logind lock: %w", err)
	}
	return os.NewFile(uintptr(fd), "logind-inhibit-lock"), nil
}

func (l *dbusLogind) WatchShutdown(ctx context.Context) (<-chan bool, error) {
	if err := l.conn.AddMatchSignal(
		godbus.WithMatchInterface(logindInterface),
		godbus.WithMatchMember("PrepareForShutdown"),
		godbus.WithMatchObjectPath(logindObject),
	); err != nil {
		return nil, fmt.Errorf("watching systemd-logind's PrepareForShutdown: %w", err)
	}
	signals := make(chan *godbus.Signal, 4)
	l.conn.Signal(signals)
	out := make(chan bool, 1)
	go func() {
		defer close(out)
		for {
			select {
			case <-ctx.Done():
				return
			case s, ok := <-signals:
				if !ok {
					return
				}
				if s == nil || s.Name != logindInterface+".PrepareForShutdown" || len(s.Body) == 0 {
					continue
				}
				active, ok := s.Body[0].(bool)
				if !ok {
					continue
				}
				select {
				case out <- active:
				case <-ctx.Done():
					return
				}
			}
		}
	}()
	return out, nil
}

func (l *dbusLogind) Close() error { return l.conn.Close() }
