// A two-rank run gives one trace (rank 0 writes it) with both ranks on one
// clock, one summary across ranks (per-rank with --verbose), and an SVG of
// the measured run drawn by the simulator's renderer, with the simulated
// run below it under --compare-sim.
// RUN: rm -rf %t && mkdir -p %t
// RUN: braidc %braid_src_root/examples/models/gpt2/model.onnx --parallel tp=2 --overlap schedule -o %t/gpt2.bplan --progress=false
// RUN: %mpirun -n 2 braid-run %t/gpt2.bplan --inputs %braid_src_root/examples/models/gpt2/test_data_set_0 --trace %t/trace.json --svg %t/run.svg --compare-sim dgx-h100 --repeat 2 | FileCheck %s --check-prefix=SUMMARY --implicit-check-not='rank 1: total'
// SUMMARY: 2 ranks: total {{[0-9.]+}} ms (slowest, rank {{[01]}}; fastest {{[0-9.]+}} ms, rank {{[01]}})
// SUMMARY-NEXT: stream 'compute': busy {{.*}} per rank
// SUMMARY: time per op, summed over ranks:
// SUMMARY: totals over 2 runs (ms, slowest rank):
// RUN: %python %S/check_merged_trace.py %t/trace.json 2 | FileCheck %s --check-prefix=TRACE
// TRACE: merged trace: 2 ranks, {{[0-9]+}} events, {{[0-9]+}} collectives per rank, each overlapping on every rank
// RUN: not ls %t/trace.rank0.json %t/trace.rank1.json
// RUN: %python -c "import xml.dom.minidom as m; d = m.parse('%t/run.svg'); print(len(d.getElementsByTagName('svg')))" | FileCheck %s --check-prefix=SVGCOUNT
// SVGCOUNT: 3
// RUN: FileCheck %s --check-prefix=SVG < %t/run.svg
// SVG: Measured: gpt2.bplan, measured on the cpu backend, rank 0 of 2
// SVG: Simulated: gpt2.bplan on {{.+}}, 1 node(s) x {{[0-9]+}} GPUs, 2 ranks
//
// RUN: %mpirun -n 2 braid-run %t/gpt2.bplan --inputs %braid_src_root/examples/models/gpt2/test_data_set_0 --verbose | FileCheck %s --check-prefix=VERBOSE
// VERBOSE: rank 0: total
// VERBOSE: rank 1: total
//
// RUN: not braid-run %t/gpt2.bplan --compare-sim dgx-h100 2>&1 | FileCheck %s --check-prefix=NOSVG
// NOSVG: braid-run: error: --compare-sim draws into --svg FILE: give one
// RUN: not braid-run %t/gpt2.bplan --backend sim --hw dgx-h100 --compare-sim dgx-h100 2>&1 | FileCheck %s --check-prefix=SIMSIM
// SIMSIM: --compare-sim compares a measured run with the simulator
