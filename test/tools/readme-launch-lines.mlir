// The README's launch lines work on a 2-core machine: every mpirun with more
// than 2 ranks says --oversubscribe (before -n), and the README says when it
// is needed.
// RUN: FileCheck --input-file=%braid_src_root/README.md %s --implicit-check-not='{{mpirun +(-n|-np) +([3-9]|[1-9][0-9])}}'
// CHECK: mpirun -n 2
// CHECK: more ranks than cores
// CHECK-NEXT: mpirun --oversubscribe -n 4
