//===- MpiCommunicator.h - collectives over MPI ----------------*- C++ -*-===//
//
// Part of the Braid project.
//
//===----------------------------------------------------------------------===//
//
// The CPU backend's communicator: one process per rank, launched by mpirun
// (or srun), one MPI communicator per mesh-axis group. Collectives are
// nonblocking MPI calls polled until they finish or the timeout passes.
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_RUNTIME_COMM_MPICOMMUNICATOR_H
#define BRAID_RUNTIME_COMM_MPICOMMUNICATOR_H

#include "runtime/comm/Communicator.h"

#include <memory>

namespace braid::rt {

/// Makes this process's communicator for `mesh`. Collective over every
/// process of MPI_COMM_WORLD: all of them call it, from one thread each, in
/// the same order as any other makeMpiCommunicator call.
///
/// Initializes MPI with MPI_THREAD_MULTIPLE on the first call (`argc` and
/// `argv` may be null) and finalizes it when the last communicator made here
/// is destroyed, unless MPI was initialized by someone else. MPI cannot be
/// initialized twice in a process, so once the last communicator is gone no
/// other can be made. Throws std::runtime_error for an invalid mesh, when the
/// MPI library does not provide MPI_THREAD_MULTIPLE, when the world size
/// differs from `mesh.numRanks()`, or when MPI was already finalized.
///
/// Semantics beyond Communicator.h:
///  - Rank r of the mesh is rank r of MPI_COMM_WORLD.
///  - Avg is Sum divided by the group size; for i64 and i32 this is C++
///    integer division (truncates toward zero).
///  - i1 holds 0/1 bytes: Sum and Max are logical or, Min and Avg (the
///    truncated mean of 0/1 values) are logical and.
///  - f16 and bf16 reduce pairwise in float and round each partial result to
///    nearest even, as an f16/bf16 device would; Max and Min return NaN when
///    either operand is NaN.
///  - Only allReduce accepts aliasing `in` and `out`.
///  - Counts above 2^31 - 1 elements per block throw CollectiveError.
///  - After a timeout or a failed MPI call the communicator refuses every
///    further call (argument errors do not count). MPI cannot cancel a
///    collective, so the abandoned one still owns its buffers and may write
///    to `out` whenever MPI makes progress: keep them alive until the
///    process exits (or end it with MPI_Abort).
std::unique_ptr<Communicator> makeMpiCommunicator(const MeshShape &mesh,
                                                  int *argc, char ***argv);

} // namespace braid::rt

#endif // BRAID_RUNTIME_COMM_MPICOMMUNICATOR_H
