package embedded

import (
	"strings"
	"testing"
)

func TestOptionsValidate(t *testing.T) {
	tests := []struct {
		name string
		o    Options
		want string // substring of the error; "" for none
	}{
		{"standalone", Options{StoreDir: "/x"}, ""},
		{"no store", Options{}, "store directory"},
		{"cluster", Options{StoreDir: "/x", Cluster: Cluster{Name: "c", Listen: "127.0.0.1:6222", Routes: []string{"nats-route://127.0.0.1:6222"}}}, ""},
		{"cluster without name", Options{StoreDir: "/x", Cluster: Cluster{Listen: "127.0.0.1:6222", Routes: []string{"nats-route://127.0.0.1:6222"}}}, "name"},
		{"cluster without listen", Options{StoreDir: "/x", Cluster: Cluster{Name: "c", Routes: []string{"nats-route://127.0.0.1:6222"}}}, "listen"},
		{"cluster without routes", Options{StoreDir: "/x", Cluster: Cluster{Name: "c", Listen: "127.0.0.1:6222"}}, "route"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.o.Validate()
			switch {
			case tt.want == "" && err != nil:
				t.Errorf("Validate() = %v; want nil", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Errorf("Validate() = %v; want an error about %q", err, tt.want)
			}
		})
	}
}

// TestStartSyncAlways checks that SyncAlways reaches JetStream (what
// sync_interval: always sets) and that the default keeps the server's.
func TestStartSyncAlways(t *testing.T) {
	for _, sync := range []bool{false, true} {
		s, err := Start(Options{StoreDir: t.TempDir(), SyncAlways: sync})
		if err != nil {
			t.Fatalf("Start(SyncAlways: %v) = %v", sync, err)
		}
		got := s.JetStreamConfig().SyncAlways
		s.Shutdown()
		s.WaitForShutdown()
		if got != sync {
			t.Errorf("Start(SyncAlways: %v): JetStream SyncAlways = %v", sync, got)
		}
	}
}

func TestStartBadRoute(t *testing.T) {
	_, err := Start(Options{StoreDir: t.TempDir(), Cluster: Cluster{Name: "c", Listen: "127.0.0.1:-1", Routes: []string{"::bad"}}})
	if err == nil {
		t.Fatal("Start(route \"::bad\") = nil error; want an error")
	}
}
