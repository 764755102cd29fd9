//===- InterfacesTest.cpp - dimension mapping and cost on every op --------===//
//
// Every braid op other than the structural ones must implement the
// dimension-mapping and cost interfaces, and must have a sample in
// interface-samples.mlir whose hand-computed mapping, FLOPs and bytes match.
//
//===----------------------------------------------------------------------===//

#include "dialects/braid/BraidDialect.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "llvm/ADT/StringSet.h"

#include <gtest/gtest.h>

using namespace mlir;
using namespace mlir::braid;

namespace {

/// Ops that carry no tensor computation: declarations and control structure.
const llvm::StringSet<> kStructuralOps = {
    "braid.mesh",  "braid.weight", "braid.set_weight", "braid.rank",
    "braid.async", "braid.await",  "braid.yield"};

class InterfacesTest : public ::testing::Test {
protected:
  void SetUp() override {
    context.loadDialect<BraidDialect, func::FuncDialect, arith::ArithDialect>();
    module = parseSourceFile<ModuleOp>(BRAID_INTERFACE_SAMPLES, &context);
    ASSERT_TRUE(module) << "cannot parse " << BRAID_INTERFACE_SAMPLES;
  }

  /// Returns the names of all registered braid ops.
  SmallVector<RegisteredOperationName> braidOps() {
    SmallVector<RegisteredOperationName> ops;
    for (RegisteredOperationName name : context.getRegisteredOperations())
      if (name.getDialectNamespace() == "braid")
        ops.push_back(name);
    return ops;
  }

  MLIRContext context;
  OwningOpRef<ModuleOp> module;
};

TEST_F(InterfacesTest, EveryComputeOpImplementsBothInterfaces) {
  SmallVector<RegisteredOperationName> ops = braidOps();
  ASSERT_GT(ops.size(), 50u) << "the braid dialect registered too few ops";
  for (RegisteredOperationName name : ops) {
    if (kStructuralOps.contains(name.getStringRef()))
      continue;
    EXPECT_TRUE(name.hasInterface<DimensionMappingOpInterface>())
        << name.getStringRef().str()
        << " lacks the dimension-mapping interface";
    EXPECT_TRUE(name.hasInterface<CostOpInterface>())
        << name.getStringRef().str() << " lacks the cost interface";
    EXPECT_TRUE(name.hasInterface<GradientOpInterface>())
        << name.getStringRef().str() << " lacks the gradient interface";
  }
}

TEST_F(InterfacesTest, EveryComputeOpHasASample) {
  llvm::StringSet<> sampled;
  module->walk([&](Operation *op) {
    if (op->hasAttr("expected_mapping"))
      sampled.insert(op->getName().getStringRef());
  });
  for (RegisteredOperationName name : braidOps()) {
    if (kStructuralOps.contains(name.getStringRef()))
      continue;
    EXPECT_TRUE(sampled.contains(name.getStringRef()))
        << name.getStringRef().str()
        << " has no sample in interface-samples.mlir";
  }
}

TEST_F(InterfacesTest, SamplesMatchHandComputedValues) {
  int checked = 0;
  module->walk([&](Operation *op) {
    auto expectedMapping = op->getAttrOfType<StringAttr>("expected_mapping");
    if (!expectedMapping)
      return;
    ++checked;
    std::string where;
    llvm::raw_string_ostream(where) << op->getLoc();
    SCOPED_TRACE(op->getName().getStringRef().str() + " at " + where);

    auto mappingOp = dyn_cast<DimensionMappingOpInterface>(op);
    ASSERT_TRUE(mappingOp);
    DimensionMapping mapping = mappingOp.getDimensionMapping();
    std::optional<std::string> problem = mapping.check(op);
    EXPECT_FALSE(problem.has_value()) << *problem;
    EXPECT_EQ(mapping.toString(), expectedMapping.getValue().str());

    auto costOp = dyn_cast<CostOpInterface>(op);
    ASSERT_TRUE(costOp);
    EXPECT_EQ(costOp.getFlops(),
              op->getAttrOfType<IntegerAttr>("expected_flops").getInt());
    EXPECT_EQ(costOp.getMinBytes(),
              op->getAttrOfType<IntegerAttr>("expected_bytes").getInt());
  });
  EXPECT_GE(checked, 60);
}

/// The ops whose reduction factors test/fuzz/reduction-combiners.mlir
/// partitions and runs, one case per factor and combiner.
TEST_F(InterfacesTest, EveryOpWithAReductionFactorHasACombinerTest) {
  const llvm::StringSet<> covered = {
      "braid.matmul",     "braid.grouped_matmul", "braid.reduce_sum",
      "braid.reduce_mean", "braid.reduce_max",    "braid.cross_entropy",
      "braid.scatter_add"};
  module->walk([&](DimensionMappingOpInterface op) {
    DimensionMapping mapping = op.getDimensionMapping();
    bool reduces = llvm::any_of(mapping.getFactors(), [](const Factor &f) {
      return f.kind == FactorKind::Reduction;
    });
    if (reduces)
      EXPECT_TRUE(covered.contains(op->getName().getStringRef()))
          << op->getName().getStringRef().str()
          << " has a reduction factor: add a case to "
             "test/fuzz/reduction-combiners.mlir";
  });
}

/// Finds the first op named `name` among the samples.
static Operation *findSample(ModuleOp module, StringRef name) {
  Operation *found = nullptr;
  module.walk([&](Operation *op) {
    if (!found && op->getName().getStringRef() == name)
      found = op;
  });
  return found;
}

TEST_F(InterfacesTest, MatmulResultDimensionsTraceToOperands) {
  auto matmul =
      cast<DimensionMappingOpInterface>(findSample(*module, "braid.matmul"));
  DimensionMapping mapping = matmul.getDimensionMapping();
  // Result rows (dim 1) come from lhs dim 1; result columns from rhs dim 1;
  // the contraction is in no result dimension.
  EXPECT_EQ(mapping.getOperandDimsOf(0, 1),
            (SmallVector<OperandDimRef>{{0, 1, DimRelation::Parallel}}));
  EXPECT_EQ(mapping.getOperandDimsOf(0, 2),
            (SmallVector<OperandDimRef>{{1, 1, DimRelation::Parallel}}));
  EXPECT_EQ(mapping.getOperandDimsOf(0, 0),
            (SmallVector<OperandDimRef>{{0, 0, DimRelation::Parallel}}));
}

TEST_F(InterfacesTest, CausalAttentionKeysAreAPrefixOfQueries) {
  auto attention =
      cast<DimensionMappingOpInterface>(findSample(*module, "braid.attention"));
  DimensionMapping mapping = attention.getDimensionMapping();
  // The query sequence (result dim 2) needs the query's dim 2 slice by slice,
  // and a prefix of the key and value sequences (dim 2 of operands 1 and 2).
  EXPECT_EQ(mapping.getOperandDimsOf(0, 2),
            (SmallVector<OperandDimRef>{{0, 2, DimRelation::Parallel},
                                        {1, 2, DimRelation::CausalPrefix},
                                        {2, 2, DimRelation::CausalPrefix}}));
  // Heads of the result come from query heads and, through the group factor,
  // from key/value heads.
  EXPECT_EQ(mapping.getOperandDimsOf(0, 1),
            (SmallVector<OperandDimRef>{{0, 1, DimRelation::Parallel},
                                        {1, 1, DimRelation::Parallel},
                                        {2, 1, DimRelation::Parallel}}));
}

TEST_F(InterfacesTest, CheckRejectsInconsistentMappings) {
  Operation *add = findSample(*module, "braid.add");
  ASSERT_TRUE(add);
  // Wrong size: a factor of 5 for a dimension of 8.
  DimensionMapping wrongSize;
  unsigned rows = wrongSize.addFactor(4, FactorKind::Parallel);
  unsigned cols = wrongSize.addFactor(5, FactorKind::Parallel);
  wrongSize.addOperand({{rows}, {cols}});
  wrongSize.addOperand({{cols}});
  wrongSize.addResult({{rows}, {cols}});
  ASSERT_TRUE(wrongSize.check(add).has_value());
  EXPECT_NE(wrongSize.check(add)->find("factors multiply to 5"),
            std::string::npos);

  // A reduction factor in a result.
  DimensionMapping reductionInResult;
  rows = reductionInResult.addFactor(4, FactorKind::Parallel);
  cols =
      reductionInResult.addFactor(8, FactorKind::Reduction, ReductionKind::Sum);
  reductionInResult.addOperand({{rows}, {cols}});
  reductionInResult.addOperand({{cols}});
  reductionInResult.addResult({{rows}, {cols}});
  ASSERT_TRUE(reductionInResult.check(add).has_value());
  EXPECT_NE(reductionInResult.check(add)->find("appears in a result"),
            std::string::npos);

  // Missing an operand.
  DimensionMapping missing;
  rows = missing.addFactor(4, FactorKind::Parallel);
  cols = missing.addFactor(8, FactorKind::Parallel);
  missing.addOperand({{rows}, {cols}});
  missing.addResult({{rows}, {cols}});
  ASSERT_TRUE(missing.check(add).has_value());
  EXPECT_NE(missing.check(add)->find("1 operands, op has 2"),
            std::string::npos);
}

} // namespace
