// Command fgd_peer_orders writes the arrival order and node tie-break prefixes that the FGD
// simulator (hkust-adsl/kubernetes-scheduler-simulator) draws for one pod list, seed and
// tune ratio, by making the same sequence of calls to Go's math/rand (written for AnalySIM
// from a reading of the peer's pkg/simulator/core.go and simulator.go; no code copied).
//
// The peer's sequence, all on the global source: Seed(seed); one Int() (a debug log line
// evaluates it); Shuffle of the pods sorted by name; then either tune-up (Intn over the
// original pods per clone, the clone that would cross the target is drawn and discarded)
// or tune-down (Intn over the current list, that pod removed, until the total demand is at
// most the target); then 10 more draws (made while the peer starts its scheduler; the count
// was found by matching the prefixes of a checked seed-42 run, -skip changes it); then Perm
// over the nodes sorted by name for the prefixes: node i (by name) gets prefix Perm[i].
//
// Input: a CSV "name,num_gpu,gpu_milli" of the pods (as AnalySIM reads them) and a CSV with
// a "node" column. Run with Go 1.19-1.23 (the peer's math/rand; from Go 1.24 the global Seed
// is ignored unless GODEBUG=randseednop=0):
//
//	go run main.go -pods pods.csv -nodes nodes.csv -gpus 6212 -seed 42 -tune 1.3 -out DIR -stem NAME
package main

import (
	"encoding/csv"
	"flag"
	"fmt"
	"log"
	"math/rand"
	"os"
	"path/filepath"
	"sort"
	"strconv"
)

type pod struct {
	name  string
	milli int64 // per GPU
	total int64 // num_gpu x milli
}

func readCSV(path string) [][]string {
	f, err := os.Open(path)
	if err != nil {
		log.Fatal(err)
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil {
		log.Fatalf("%s: %v", path, err)
	}
	return rows
}

func column(header []string, name, path string) int {
	for i, h := range header {
		if h == name {
			return i
		}
	}
	log.Fatalf("%s: no column %q", path, name)
	return -1
}

func main() {
	podsPath := flag.String("pods", "", "pods CSV: name,num_gpu,gpu_milli")
	nodesPath := flag.String("nodes", "", "nodes CSV with a node column")
	gpus := flag.Int64("gpus", 0, "GPUs in the cluster")
	seed := flag.Int64("seed", 42, "tune seed")
	tune := flag.Float64("tune", 1.3, "tune ratio")
	out := flag.String("out", ".", "output folder")
	stem := flag.String("stem", "openb_pod_list_default", "file name stem")
	skip := flag.Int("skip", 10, "draws made between tuning and the node prefixes")
	flag.Parse()

	rows := readCSV(*podsPath)
	ci, ni, mi := column(rows[0], "name", *podsPath), column(rows[0], "num_gpu", *podsPath), column(rows[0], "gpu_milli", *podsPath)
	pods := make([]pod, 0, len(rows)-1)
	for _, r := range rows[1:] {
		num, err1 := strconv.ParseFloat(r[ni], 64)
		milli, err2 := strconv.ParseFloat(r[mi], 64)
		if err1 != nil || err2 != nil {
			log.Fatalf("%s: bad row %v", *podsPath, r)
		}
		if num == 0 {
			milli = 0
		}
		pods = append(pods, pod{r[ci], int64(milli), int64(milli) * int64(num)})
	}
	nrows := readCSV(*nodesPath)
	nc := column(nrows[0], "node", *nodesPath)
	nodes := make([]string, 0, len(nrows)-1)
	for _, r := range nrows[1:] {
		nodes = append(nodes, r[nc])
	}

	rand.Seed(*seed)
	_ = rand.Int()
	sort.Slice(pods, func(i, j int) bool { return pods[i].name < pods[j].name })
	workload := make([]pod, len(pods)) // the peer clones from the pods as read (sorted by name)
	copy(workload, pods)
	rand.Shuffle(len(pods), func(i, j int) { pods[i], pods[j] = pods[j], pods[i] })
	var demand int64
	for _, p := range pods {
		demand += p.total
	}
	target := *tune * float64(*gpus*1000)
	names := make([]string, 0, len(pods))
	if float64(demand) > target {
		for float64(demand) > target {
			idx := rand.Intn(len(pods))
			demand -= pods[idx].total
			pods = append(pods[:idx], pods[idx+1:]...)
		}
		for _, p := range pods {
			names = append(names, p.name)
		}
	} else {
		for _, p := range pods {
			names = append(names, p.name)
		}
		if float64(demand) < target {
			for i := 0; ; i++ {
				p := workload[rand.Intn(len(workload))]
				if float64(demand+p.milli) > target {
					break
				}
				demand += p.total
				names = append(names, fmt.Sprintf("%s-tuned-%d", p.name, i))
			}
		}
	}
	sort.Strings(nodes)
	for k := 0; k < *skip; k++ {
		_ = rand.Int63()
	}
	perm := rand.Perm(len(nodes))

	write := func(name string, header []string, body [][]string) {
		f, err := os.Create(filepath.Join(*out, name))
		if err != nil {
			log.Fatal(err)
		}
		w := csv.NewWriter(f)
		_ = w.Write(header)
		_ = w.WriteAll(body)
		w.Flush()
		f.Close()
	}
	arr := make([][]string, len(names))
	for i, n := range names {
		arr[i] = []string{strconv.Itoa(i), n}
	}
	write(fmt.Sprintf("%s_tune%g_seed%d_arrivals.csv", *stem, *tune, *seed), []string{"arrival_idx", "pod_name"}, arr)
	pre := make([][]string, len(nodes))
	for i, n := range nodes {
		pre[i] = []string{strconv.Itoa(i), fmt.Sprintf("%04d", perm[i]), n}
	}
	write(fmt.Sprintf("%s_seed%d_node_prefix.csv", *stem, *seed), []string{"node_name_sorted_idx", "tiebreak_prefix", "node_name"}, pre)
}
