package router

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// ObsConfig is how a router is watched and steered from outside: the
// control socket, Prometheus metrics, logs and a daily reconnect.
type ObsConfig struct {
	// MetricsListen is the address /metrics is served on ("" = off).
	MetricsListen string `key:"metrics.listen"`
	// MetricsTextfile is a file replaced with the metrics in
	// node_exporter's textfile format on every stats tick ("" = none).
	MetricsTextfile string `key:"metrics.textfile"`
	// Socket is the control socket's path ("" = none; a configuration
	// file gets DefaultSocket unless it says "control.socket off").
	Socket string `key:"control.socket"`
	// LogLevel is error, warn, info or debug (a protocol trace);
	// LogFormat text or json.
	LogLevel  string `key:"log.level"`
	LogFormat string `key:"log.format"`
	// ReconnectAt is a local time of day (HH:MM) at which the session is
	// ended and brought up again every day, before an ISP's forced
	// disconnect comes at a worse time ("" = never).
	ReconnectAt string `key:"pppoe.reconnect_at"`
}

// DefaultObsConfig is ObsConfig as a configuration file starts it.
func DefaultObsConfig() ObsConfig {
	return ObsConfig{Socket: DefaultSocket, LogLevel: "info", LogFormat: "text"}
}

// ObsKeys are the configuration keys ObsConfig.Set reads.
var ObsKeys = []string{"metrics.listen", "metrics.textfile", "control.socket", "log.level", "log.format", "pppoe.reconnect_at"}

// Set reads one configuration key into o; it reports false for a key
// that is not one of ObsKeys.
func (o *ObsConfig) Set(key, val string) (bool, error) {
	switch key {
	case "metrics.listen":
		if val == "off" {
			o.MetricsListen = ""
			return true, nil
		}
		if _, _, err := net.SplitHostPort(val); err != nil {
			return true, fmt.Errorf("%q: want HOST:PORT (e.g. 127.0.0.1:9121) or off", val)
		}
		o.MetricsListen = val
	case "metrics.textfile":
		o.MetricsTextfile = val
	case "control.socket":
		if val == "off" || val == "none" {
			o.Socket = ""
			return true, nil
		}
		if !strings.HasPrefix(val, "/") {
			return true, fmt.Errorf("%q: want an absolute path or off", val)
		}
		o.Socket = val
	case "log.level":
		if _, err := parseLevel(val); err != nil {
			return true, err
		}
		o.LogLevel = val
	case "log.format":
		if val != "text" && val != "json" {
			return true, fmt.Errorf("%q: want text or json", val)
		}
		o.LogFormat = val
	case "pppoe.reconnect_at":
		if val == "off" {
			o.ReconnectAt = ""
			return true, nil
		}
		if _, _, err := parseClock(val); err != nil {
			return true, err
		}
		o.ReconnectAt = val
	default:
		return false, nil
	}
	return true, nil
}

// parseClock reads HH:MM (24 h).
func parseClock(s string) (h, m int, err error) {
	hs, ms, ok := strings.Cut(s, ":")
	if ok && len(ms) == 2 {
		h, err = strconv.Atoi(hs)
		if err == nil {
			m, err = strconv.Atoi(ms)
		}
		if err == nil && h >= 0 && h < 24 && m >= 0 && m < 60 {
			return h, m, nil
		}
	}
	return 0, 0, fmt.Errorf("%q: want a time of day HH:MM (e.g. 04:30)", s)
}

// nextClock returns the first time at h:m local time after now.
func nextClock(now time.Time, h, m int) time.Time {
	t := time.Date(now.Year(), now.Month(), now.Day(), h, m, 0, 0, now.Location())
	if !t.After(now) {
		t = time.Date(now.Year(), now.Month(), now.Day()+1, h, m, 0, 0, now.Location())
	}
	return t
}

// obsState is the Router's share of observation and remote control.
type obsState struct {
	obs     ObsConfig
	snap    atomic.Pointer[Stats] // the last sample (sampleLoop), nil before Run
	refused atomic.Uint64         // control connections refused (another user)
	log     atomic.Pointer[slog.Logger]
	cfgFile string
	// allowUID, when set (tests), replaces the control socket's owner
	// check: only that uid is admitted.
	allowUID atomic.Pointer[uint32]
	ctlLn    *net.UnixListener
	httpLn   net.Listener
	httpSrv  *http.Server
	obsOnce  sync.Once
	listened bool
}

// SetConfigFile names the file the router's configuration came from:
// the control socket's reload (and ReloadFile) re-reads it.
func (r *Router) SetConfigFile(file string) { r.cfgFile = file }

// ReloadFile re-reads the configuration file (SetConfigFile) and applies
// it as Reload does: what was applied, and the keys that need a restart.
func (r *Router) ReloadFile() (applied, restart []string, err error) {
	if r.cfgFile == "" {
		return nil, nil, fmt.Errorf("no configuration file to reload")
	}
	f, err := os.Open(r.cfgFile)
	if err != nil {
		return nil, nil, err
	}
	cfg, err := ParseConfig(f)
	f.Close()
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w (nothing changed)", r.cfgFile, err)
	}
	return r.Reload(cfg)
}

// Reconnect ends the session with PADT and brings a new one up at once
// (pppfwd reconnect, pppoe.reconnect_at); reason is logged and shown as
// the last reason.
func (r *Router) Reconnect(reason string) error { return r.cli.Reconnect(reason) }

// ListenObs opens the control socket and the metrics listener; Run
// does it first if it was not done (a configured address that cannot be
// had is then Run's error). Calling it before Run lets a caller connect
// as soon as it returns.
func (r *Router) ListenObs() error {
	if r.listened {
		return nil
	}
	r.listened = true
	r.obs = r.cfg.Obs // Reload leaves these alone: they need a restart
	if r.obs.Socket != "" {
		ln, err := listenControl(r.obs.Socket)
		if err != nil {
			return fmt.Errorf("control.socket: %w", err)
		}
		r.ctlLn = ln
	}
	if r.obs.MetricsListen != "" {
		ln, err := net.Listen("tcp", r.obs.MetricsListen)
		if err != nil {
			r.closeObs()
			return fmt.Errorf("metrics.listen: %w", err)
		}
		r.httpLn = ln
	}
	return nil
}

// runObs starts the sampler, the control socket's and the metrics'
// servers and the reconnect schedule; they end when ctx is done.
func (r *Router) runObs(ctx context.Context, wg *sync.WaitGroup) {
	wg.Add(1)
	go func() { defer wg.Done(); r.sampleLoop(ctx) }()
	if r.ctlLn != nil {
		wg.Add(1)
		go func() { defer wg.Done(); r.serveControl(ctx, r.ctlLn) }()
	}
	if r.httpLn != nil {
		r.httpSrv = &http.Server{Handler: r.metricsHandler(), ReadHeaderTimeout: 10 * time.Second}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := r.httpSrv.Serve(r.httpLn); err != nil && err != http.ErrServerClosed {
				r.logf("pppfwd: metrics: %v", err)
			}
		}()
	}
	if r.obs.ReconnectAt != "" {
		h, m, _ := parseClock(r.obs.ReconnectAt) // checked by Set
		wg.Add(1)
		go func() { defer wg.Done(); r.reconnectDaily(ctx, h, m) }()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		<-ctx.Done()
		r.closeObs()
	}()
}

// closeObs closes the listeners and removes the control socket.
func (r *Router) closeObs() {
	r.obsOnce.Do(func() {
		if r.ctlLn != nil {
			r.ctlLn.Close() // removes the socket file (unlink on close)
		}
		if r.httpSrv != nil {
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			_ = r.httpSrv.Shutdown(ctx)
			cancel()
		} else if r.httpLn != nil {
			r.httpLn.Close()
		}
	})
}

// reconnectDaily reconnects at h:m local time every day until ctx is
// done.
func (r *Router) reconnectDaily(ctx context.Context, h, m int) {
	for {
		next := nextClock(time.Now(), h, m)
		t := time.NewTimer(time.Until(next))
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		reason := fmt.Sprintf("scheduled reconnect (pppoe.reconnect_at %02d:%02d)", h, m)
		if err := r.Reconnect(reason); err != nil {
			r.logf("pppfwd: %s: %v", reason, err)
		}
	}
}

// MetricsAddr returns the address /metrics is served on (nil when
// metrics.listen is off or before Run).
func (r *Router) MetricsAddr() net.Addr {
	if r.httpLn == nil {
		return nil
	}
	return r.httpLn.Addr()
}

// obsVal is the key table's value for an ObsConfig key: ObsConfig.Set
// parses it; its text is nil at the default a configuration file starts
// with (DefaultObsConfig), "off" for a switched-off socket.
func obsVal(key string) value {
	return funcVal{
		setf: func(c *Config, s string) error { _, err := c.Obs.Set(key, s); return err },
		textf: func(c *Config) []string {
			o, d := c.Obs, DefaultObsConfig()
			v := map[string][2]string{
				"metrics.listen": {o.MetricsListen, d.MetricsListen}, "metrics.textfile": {o.MetricsTextfile, d.MetricsTextfile},
				"control.socket": {o.Socket, d.Socket}, "log.level": {o.LogLevel, d.LogLevel},
				"log.format": {o.LogFormat, d.LogFormat}, "pppoe.reconnect_at": {o.ReconnectAt, d.ReconnectAt},
			}[key]
			switch {
			case v[0] == v[1] || v[0] == "" && key != "control.socket":
				return nil
			case v[0] == "":
				return []string{"off"}
			}
			return []string{v[0]}
		},
	}
}
