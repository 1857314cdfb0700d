package scale

import (
	"encoding/csv"
	"io"
	"strconv"
	"strings"

	"github.com/pppfwd/pppfwd/dataplane"
)

// CSVHeader is the CSV's first row. The order is stable: columns are
// only ever added at the end. Per-thread columns hold one value per
// worker, in worker order, separated by ';'; the steer_thread_* columns
// are 0 without a steering thread; the stage_* columns (scaled ns per
// packet, bench pipeline --stages) are empty without stage costs; the
// speedup columns (Point.Speedup) are 0 without a 1-worker point.
var CSVHeader = append([]string{
	"workers", "flows", "size", "steer", "threads", "oversubscribed", "runs",
	"mpps", "mpps_min", "mpps_max", "wall_ns_per_pkt", "cpu_ns_per_pkt", "steer_ns_per_pkt",
	"allocs_per_pkt", "steered_share", "redirected_share", "busiest_worker_share", "idle_workers", "packets", "lan_to_wan", "wan_to_lan", "seconds",
	"worker_packets", "worker_cpu_ns", "worker_steer_ns", "worker_work_ns", "worker_off_cpu_ns",
	"steer_thread_cpu_ns", "steer_thread_steer_ns", "error",
	"wan_redirected_share", "worker_wan_redirected",
	"stage_inflation", "nat_insert_ns",
}, append(stageColumns(), "speedup", "speedup_min", "speedup_max")...)

func stageColumns() []string {
	var cols []string
	for s := dataplane.Stage(0); s < dataplane.NumStages; s++ {
		cols = append(cols, "stage_"+s.String()+"_ns")
	}
	return cols
}

// WriteCSV writes one row per point under CSVHeader.
func WriteCSV(w io.Writer, points []Point) error {
	cw := csv.NewWriter(w)
	if err := cw.Write(CSVHeader); err != nil {
		return err
	}
	for i := range points {
		if err := cw.Write(csvRow(&points[i])); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}

func csvRow(p *Point) []string {
	f := func(v float64) string { return strconv.FormatFloat(v, 'g', 6, 64) }
	u := func(v uint64) string { return strconv.FormatUint(v, 10) }
	list := func(get func(WorkerCPU) uint64) string {
		parts := make([]string, len(p.PerWorker))
		for i, c := range p.PerWorker {
			parts[i] = u(get(c))
		}
		return strings.Join(parts, ";")
	}
	var stCPU, stSteer uint64
	if p.SteerThread != nil {
		stCPU, stSteer = p.SteerThread.CPUNs, p.SteerThread.SteerNs
	}
	stages := make([]string, 2+int(dataplane.NumStages))
	if ns := p.StageNs(); ns != nil {
		stages[0], stages[1] = f(p.Stages.Inflation), f(p.Stages.NATInsertNs)
		for i, v := range ns {
			stages[2+i] = f(v)
		}
	}
	return append([]string{
		strconv.Itoa(p.Workers), strconv.Itoa(p.Flows), p.Size, p.Steer, strconv.Itoa(p.Threads),
		strconv.FormatBool(p.Oversubscribed), strconv.Itoa(p.Runs),
		f(p.Mpps), f(p.MppsMin), f(p.MppsMax), f(p.WallNsPerPkt), f(p.CPUNsPerPkt), f(p.SteerNsPerPkt),
		f(p.AllocsPerPkt), f(p.SteeredShare), f(p.RedirectedShare), f(p.BusiestShare), strconv.Itoa(p.IdleWorkers), u(p.Packets), u(p.LANToWAN), u(p.WANToLAN), f(p.Seconds),
		list(func(c WorkerCPU) uint64 { return c.Packets }),
		list(func(c WorkerCPU) uint64 { return c.CPUNs }),
		list(func(c WorkerCPU) uint64 { return c.SteerNs }),
		list(func(c WorkerCPU) uint64 { return c.WorkNs }),
		list(func(c WorkerCPU) uint64 { return c.OffCPUNs }),
		u(stCPU), u(stSteer), p.Error,
		f(p.WANRedirectedShare), list(func(c WorkerCPU) uint64 { return c.WANRedirects }),
	}, append(stages, f(p.Speedup), f(p.SpeedupMin), f(p.SpeedupMax))...)
}
