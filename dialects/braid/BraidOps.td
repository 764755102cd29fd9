//===- BraidOps.td - all ops of the braid dialect --------------*- tablegen -*-===//

#ifndef BRAID_DIALECT_BRAIDOPS_TD
#define BRAID_DIALECT_BRAIDOPS_TD

include "dialects/braid/BraidStructureOps.td"
include "dialects/braid/BraidComputeOps.td"
include "dialects/braid/BraidCollectiveOps.td"

#endif // BRAID_DIALECT_BRAIDOPS_TD
