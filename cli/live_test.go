package cli

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/pulsarscope/pulsarscope/capture"
)

// The live-capture tests run the traffic lab (tools/trafficgen: scripted
// broker and the real Pulsar Go client) on a free loopback port and capture
// it with 'pulsarscope capture', in-process. They need root (CAP_NET_RAW)
// and build the lab's binaries themselves (the first build of the driver,
// which links the Pulsar client, takes a minute on a cold cache).

type labBins struct{ dir, broker, driver, pulsarscope string }

var (
	labOnce sync.Once
	lab     labBins
	labErr  error
)

func goTool() string {
	if p, err := exec.LookPath("go"); err == nil {
		return p
	}
	return filepath.Join(os.Getenv("GOROOT"), "bin", "go")
}

// buildLab builds broker, driver and pulsarscope into a world-readable
// temporary folder (the unprivileged test runs pulsarscope as nobody).
// The lab module is built with a copy of its go.mod (-modfile), so that a
// go.mod lagging behind the root module's is never rewritten.
func buildLab(t *testing.T) labBins {
	t.Helper()
	labOnce.Do(func() {
		dir, err := os.MkdirTemp("", "pulsarscope-live-test-")
		if err != nil {
			labErr = err
			return
		}
		os.Chmod(dir, 0o755)
		lab = labBins{dir: dir, broker: filepath.Join(dir, "broker"), driver: filepath.Join(dir, "driver"), pulsarscope: filepath.Join(dir, "pulsarscope")}
		labDir, _ := filepath.Abs("../tools/trafficgen")
		for _, f := range []string{"go.mod", "go.sum"} {
			b, err := os.ReadFile(filepath.Join(labDir, f))
			if err != nil {
				labErr = err
				return
			}
			if err := os.WriteFile(filepath.Join(dir, f), b, 0o644); err != nil {
				labErr = err
				return
			}
		}
		builds := []struct {
			dir  string
			args []string
		}{
			{labDir, []string{"build", "-mod=mod", "-modfile=" + filepath.Join(dir, "go.mod"), "-o", lab.broker, "./cmd/broker"}},
			{labDir, []string{"build", "-mod=mod", "-modfile=" + filepath.Join(dir, "go.mod"), "-o", lab.driver, "./cmd/driver"}},
			{"..", []string{"build", "-o", lab.pulsarscope, "."}},
		}
		for _, b := range builds {
			cmd := exec.Command(goTool(), b.args...)
			cmd.Dir = b.dir
			cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
			if out, err := cmd.CombinedOutput(); err != nil {
				labErr = fmt.Errorf("go %s: %v\n%s", strings.Join(b.args, " "), err, out)
				return
			}
		}
	})
	if labErr != nil {
		t.Fatal(labErr)
	}
	return lab
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	port := l.Addr().(*net.TCPAddr).Port
	// The broker's second listener uses the same port on 127.0.0.2.
	l2, err := net.Listen("tcp", fmt.Sprintf("127.0.0.2:%d", port))
	if err != nil {
		t.Skipf("127.0.0.2:%d not available: %v", port, err)
	}
	l2.Close()
	return port
}

// runScenario runs broker and driver on port and returns the broker's
// frame counts (its log of every frame it read and wrote) by direction
// and type.
func runScenario(t *testing.T, b labBins, port int, scenario string) map[string]map[string]int {
	t.Helper()
	logPath, wait := startScenario(t, b, port, scenario)
	wait()
	return brokerCounts(t, logPath)
}

// startScenario starts broker and driver on port; it returns the path of
// the broker's log and a function that waits for the scenario's end.
func startScenario(t *testing.T, b labBins, port int, scenario string) (string, func()) {
	t.Helper()
	dir := t.TempDir()
	ready, logPath := filepath.Join(dir, "ready"), filepath.Join(dir, "broker.log")
	var berr bytes.Buffer
	broker := exec.Command(b.broker, "-addr", fmt.Sprintf("127.0.0.1:%d", port), "-redirect-addr", fmt.Sprintf("127.0.0.2:%d", port),
		"-lifetime", "60s", "-log", logPath, "-ready", ready)
	broker.Stderr = &berr
	if err := broker.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { broker.Process.Kill() })
	for i := 0; i < 200; i++ {
		if _, err := os.Stat(ready); err == nil {
			break
		}
		time.Sleep(25 * time.Millisecond)
	}
	if _, err := os.Stat(ready); err != nil {
		t.Fatalf("broker did not start: %s", berr.String())
	}
	driver := exec.Command(b.driver, "-url", fmt.Sprintf("pulsar://127.0.0.1:%d", port), "-scenario", scenario, "-timeout", "20s")
	var dout bytes.Buffer
	driver.Stdout, driver.Stderr = &dout, &dout
	if err := driver.Start(); err != nil {
		t.Fatal(err)
	}
	return logPath, func() {
		t.Helper()
		if err := driver.Wait(); err != nil {
			t.Fatalf("driver: %v\n%s", err, dout.String())
		}
		broker.Process.Signal(syscall.SIGTERM)
		if err := broker.Wait(); err != nil {
			t.Fatalf("broker: %v\n%s", err, berr.String())
		}
	}
}

// brokerCounts reads a broker log: the frames it read and wrote, by
// direction and type.
func brokerCounts(t *testing.T, logPath string) map[string]map[string]int {
	t.Helper()
	f, err := os.Open(logPath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	counts := map[string]map[string]int{"c2s": {}, "s2c": {}}
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var ev struct{ Ev, Dir, Type string }
		if json.Unmarshal(sc.Bytes(), &ev) == nil && ev.Ev == "frame" {
			counts[ev.Dir][ev.Type]++
		}
	}
	return counts
}

type mainResult struct {
	stdout, stderr string
	code           int
}

var liveMu sync.Mutex // one in-process capture at a time (liveOpenHook, SIGINT)

// startCapture runs Main with args in a goroutine and returns once the
// capture socket is open.
func startCapture(t *testing.T, args ...string) <-chan mainResult {
	t.Helper()
	liveMu.Lock()
	opened := make(chan *capture.Live, 1)
	liveOpenHook = func(l *capture.Live) { opened <- l }
	res := make(chan mainResult, 1)
	go func() {
		var o, e bytes.Buffer
		code := Main(args, strings.NewReader(""), &o, &e)
		res <- mainResult{o.String(), e.String(), code}
	}()
	select {
	case <-opened:
		return res
	case r := <-res:
		liveOpenHook = nil
		liveMu.Unlock()
		t.Fatalf("capture %v ended before it opened: exit %d: %s", args, r.code, r.stderr)
	case <-time.After(10 * time.Second):
		t.Fatalf("capture %v did not open", args)
	}
	return nil
}

func waitCapture(t *testing.T, res <-chan mainResult, timeout time.Duration) mainResult {
	t.Helper()
	defer func() { liveOpenHook = nil; liveMu.Unlock() }()
	select {
	case r := <-res:
		return r
	case <-time.After(timeout):
		t.Fatalf("capture did not end within %v", timeout)
	}
	return mainResult{}
}

// interrupt sends SIGINT to this process: Main's signal.NotifyContext
// turns it into the end of the capture.
func interrupt(t *testing.T, res <-chan mainResult) mainResult {
	t.Helper()
	time.Sleep(200 * time.Millisecond) // the last packets (FIN, ACK) reach the ring
	if err := syscall.Kill(os.Getpid(), syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	return waitCapture(t, res, 5*time.Second)
}

// frameCounts reads 'read -o json' output: frames by direction and type,
// and every problem.
func frameCounts(t *testing.T, out string) (map[string]map[string]int, []string) {
	t.Helper()
	counts := map[string]map[string]int{"c2s": {}, "s2c": {}}
	var problems []string
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if line == "" {
			continue
		}
		var r record
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("bad JSON line %q: %v", line, err)
		}
		if r.Problems != nil {
			for _, p := range *r.Problems {
				problems = append(problems, p.Code+": "+p.Detail)
			}
		}
		if r.Event == "" {
			counts[r.Dir][r.Type]++
		}
	}
	return counts, problems
}

func sameCounts(a, b map[string]map[string]int) bool {
	for _, d := range []string{"c2s", "s2c"} {
		if !equalCounts(a[d], b[d]) {
			return false
		}
	}
	return true
}

func TestCaptureLive(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("live capture needs root (CAP_NET_RAW): run the tests as root")
	}
	b := buildLab(t)
	port := freePort(t)
	p := fmt.Sprint(port)
	// -f keeps other traffic on 6650 (always a Pulsar port) out.
	base := []string{"capture", "--port", p, "-f", "port " + p}

	for _, tc := range []struct{ iface, file string }{{"lo", "lo.pcapng"}, {"any", "any.pcap"}} {
		t.Run(tc.iface, func(t *testing.T) {
			file := filepath.Join(t.TempDir(), tc.file)
			res := startCapture(t, append(base, "-i", tc.iface, "-o", "json", "-w", file)...)
			want := runScenario(t, b, port, "basic")
			r := interrupt(t, res)
			if r.code != 0 {
				t.Fatalf("exit %d: %s", r.code, r.stderr)
			}
			got, problems := frameCounts(t, r.stdout)
			if !sameCounts(got, want) {
				t.Errorf("decoded frames %v\nbroker's log    %v", got, want)
			}
			if got["c2s"]["SEND"] != 10 || got["s2c"]["MESSAGE"] != 10 || got["c2s"]["CONNECT"] != 1 {
				t.Errorf("basic scenario: want 10 SEND, 10 MESSAGE, 1 CONNECT: %v", got)
			}
			if len(problems) > 0 {
				t.Errorf("problems: %v", problems)
			}
			if !strings.Contains(r.stderr, " 0 dropped by kernel") || !strings.Contains(r.stderr, "capture "+tc.iface+":") {
				t.Errorf("summary: %q", r.stderr)
			}
			fi, err := os.Stat(file)
			if err != nil {
				t.Fatal(err)
			}
			if fi.Mode().Perm() != 0o600 {
				t.Errorf("-w file mode %v, want 0600", fi.Mode().Perm())
			}
			// The written file decodes to exactly the live output.
			out, stderr, code := run(t, "read", "-o", "json", "--port", p, file)
			if code != 0 {
				t.Fatalf("read %s: exit %d: %s", file, code, stderr)
			}
			if out != r.stdout {
				t.Errorf("read of the -w file differs from the live output: %s", firstDiff(out, r.stdout))
			}
		})
	}

	t.Run("count", func(t *testing.T) {
		res := startCapture(t, append(base, "-i", "lo", "-o", "json", "-c", "5")...)
		runScenario(t, b, port, "basic")
		r := waitCapture(t, res, 5*time.Second)
		if r.code != 0 {
			t.Fatalf("exit %d: %s", r.code, r.stderr)
		}
		got, problems := frameCounts(t, r.stdout)
		n := 0
		for _, m := range got {
			for _, c := range m {
				n += c
			}
		}
		if n != 5 || len(problems) > 0 {
			t.Errorf("-c 5: %d frames (%v), problems %v", n, got, problems)
		}
	})

	t.Run("autostop", func(t *testing.T) {
		start := time.Now()
		res := startCapture(t, append(base, "-i", "lo", "-q", "-a", "duration:0.5")...)
		r := waitCapture(t, res, 5*time.Second)
		if r.code != 0 {
			t.Fatalf("exit %d: %s", r.code, r.stderr)
		}
		if d := time.Since(start); d < 500*time.Millisecond || d > 3*time.Second {
			t.Errorf("-a duration:0.5 took %v", d)
		}
		// -q: the frame summary and the capture summary on stdout.
		if !strings.HasPrefix(r.stdout, "0 frames, 0 bytes in frames, 0 problems") || !strings.Contains(r.stdout, "dropped by kernel") {
			t.Errorf("-q output %q", r.stdout)
		}
	})

	t.Run("errors", func(t *testing.T) {
		for _, c := range []struct {
			args []string
			code int
			msg  string
		}{
			{[]string{"capture", "-i", "lo", "-f", "udp port 53"}, ExitUsage, "-tags pcap"},
			{[]string{"capture", "-i", "no-such-if0"}, ExitInput, "capture -D"},
			{[]string{"capture"}, ExitUsage, "-i NAME"},
			{[]string{"capture", "-i", "lo", "-b", "filesize:10"}, ExitUsage, "-w"},
			{[]string{"capture", "-i", "lo", "-a", "packets:3"}, ExitUsage, "duration"},
		} {
			_, stderr, code := run(t, c.args...)
			if code != c.code || !strings.Contains(stderr, c.msg) {
				t.Errorf("%v: exit %d %q, want %d and %q", c.args, code, stderr, c.code, c.msg)
			}
		}
		out, _, code := run(t, "capture", "-D")
		if code != 0 || !strings.Contains(out, ". lo") || !strings.Contains(out, ". any") {
			t.Errorf("-D: %d %q", code, out)
		}
	})

	t.Run("unprivileged", func(t *testing.T) {
		setpriv, err := exec.LookPath("setpriv")
		if err != nil {
			t.Skip("setpriv not installed")
		}
		cmd := exec.Command(setpriv, "--reuid=65534", "--regid=65534", "--clear-groups", "--inh-caps=-all", b.pulsarscope, "capture", "-i", "lo", "-a", "duration:1")
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		err = cmd.Run()
		ee, ok := err.(*exec.ExitError)
		if !ok || ee.ExitCode() != ExitInput {
			t.Fatalf("as nobody: %v, stderr %q", err, stderr.String())
		}
		msg := stderr.String()
		if strings.Count(msg, "\n") != 1 || !strings.Contains(msg, "setcap cap_net_raw,cap_net_admin=eip") || !strings.Contains(msg, "sudo") {
			t.Errorf("message: %q", msg)
		}
	})
}

func TestCaptureRingBuffer(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("live capture needs root (CAP_NET_RAW): run the tests as root")
	}
	b := buildLab(t)
	port := freePort(t)
	p := fmt.Sprint(port)
	dir := t.TempDir()
	res := startCapture(t, "capture", "-i", "lo", "--port", p, "-f", "port "+p, "-q",
		"-w", filepath.Join(dir, "ring.pcap"), "-b", "filesize:2,files:3")
	runScenario(t, b, port, "basic")
	r := interrupt(t, res)
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "ring_*.pcap"))
	if len(files) != 3 {
		t.Fatalf("ring buffer files: %v", files)
	}
	for _, f := range files {
		_, stderr, code := run(t, "read", "-q", "--port", p, f)
		if code != 0 {
			t.Errorf("%s: exit %d %s", f, code, stderr)
		}
	}
}

// TestCaptureLiveDrops: a live capture whose reader stops while the lab
// sends more than its kernel buffer holds (SIGSTOP, the smallest buffer,
// the large scenario twice) loses packets in the kernel. The capture says
// how many; the analysis survives the loss: the only problems are lost
// and skipped bytes, every connection's byte accounting balances, the
// file written decodes to exactly the live output, and one pass of
// 'stats' gives the report two passes give.
func TestCaptureLiveDrops(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("live capture needs root (CAP_NET_RAW): run the tests as root")
	}
	b := buildLab(t)
	port := freePort(t)
	p := fmt.Sprint(port)
	file := filepath.Join(t.TempDir(), "drops.pcapng")
	cmd := exec.Command(b.pulsarscope, "capture", "-i", "lo", "--port", p, "-f", "port "+p, "-B", "1", "-o", "json", "-w", file)
	var stdout bytes.Buffer
	cmd.Stdout = &stdout
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	rd := bufio.NewReader(stderr)
	if line, err := rd.ReadString('\n'); err != nil || !strings.HasPrefix(line, "Capturing on 'lo'") {
		t.Fatalf("capture did not start: %q %v", line, err)
	}
	rest := make(chan string, 1)
	go func() { b, _ := io.ReadAll(rd); rest <- string(b) }()
	cmd.Process.Signal(syscall.SIGSTOP)
	// About 5 MB each way on one connection, beyond the ring's two blocks
	// of 1 MiB: the reader goes on once the broker has read 6 of its 12
	// SENDs, so that the connection loses packets in its middle.
	logPath, wait := startScenario(t, b, port, "large-burst")
	for i := 0; ; i++ {
		if brokerCounts(t, logPath)["c2s"]["SEND"] >= 6 {
			break
		}
		if i == 400 {
			t.Fatal("the broker did not read 6 SENDs in 20 s")
		}
		time.Sleep(50 * time.Millisecond)
	}
	cmd.Process.Signal(syscall.SIGCONT)
	wait()
	time.Sleep(500 * time.Millisecond)
	cmd.Process.Signal(syscall.SIGINT)
	werr := cmd.Wait()
	summary := <-rest
	if werr != nil {
		t.Fatalf("capture: %v: %s", werr, summary)
	}
	var dropped int
	if i := strings.Index(summary, " received by filter, "); i < 0 {
		t.Fatalf("summary: %q", summary)
	} else if _, err := fmt.Sscanf(summary[i+len(" received by filter, "):], "%d dropped by kernel", &dropped); err != nil {
		t.Fatalf("summary %q: %v", summary, err)
	}
	if dropped == 0 {
		t.Fatalf("no packets dropped by the kernel (the fault did not happen): %q", summary)
	}
	live := stdout.String()
	lost := int64(0)
	for _, line := range ndjsonLines(live) {
		var r record
		if err := json.Unmarshal(line, &r); err != nil {
			t.Fatalf("bad JSON line %q: %v", line, err)
		}
		if r.Problems != nil {
			for _, pr := range *r.Problems {
				switch pr.Code {
				case "bytes-lost", "bytes-skipped", "truncated-frame":
				default:
					t.Errorf("frame %d / event %q: problem %s: %s", r.N, r.Event, pr.Code, pr.Detail)
				}
			}
		}
		if r.Event == "close" {
			for dir, a := range r.Accounting {
				if a.Seen != a.InFrames+a.Skipped+a.Truncated+a.Ignored {
					t.Errorf("conn %d %s: accounting does not balance: %+v", r.Conn, dir, a)
				}
				lost += a.Lost
			}
		}
	}
	if lost == 0 {
		t.Errorf("%d packets dropped, but no bytes reported lost", dropped)
	}
	out, errOut, code := run(t, "read", "-o", "json", "--port", p, file)
	if code != 0 {
		t.Fatalf("read %s: exit %d: %s", file, code, errOut)
	}
	if out != live {
		t.Errorf("read of the -w file differs from the live output: %s", firstDiff(out, live))
	}
	one, _, _ := run(t, "stats", "--port", p, file)
	two, _, _ := run(t, "stats", "-2", "--port", p, file)
	if one != two {
		t.Errorf("one and two passes differ:\n%s\n---\n%s", one, two)
	}
	t.Logf("%d packets dropped by the kernel, %d bytes lost; %s", dropped, lost, strings.TrimSpace(summary))
}
