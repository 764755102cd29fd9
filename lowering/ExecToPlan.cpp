//===- ExecToPlan.cpp - exec plans to .bplan files ------------------------===//

#include <limits>
#include "lowering/ExecToPlan.h"

#include "dialects/braid/Locations.h"

#include "dialects/braid/BraidDialect.h"
#include "runtime/plan/Plan.pb.h"

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>

#include "mlir/Support/FileUtilities.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;
using namespace mlir::braid;
namespace pb = ::braid::plan;

/// The plan's element type of an MLIR element type.
static FailureOr<pb::DType> dtypeOf(Operation *where, Type type) {
  if (type.isF32())
    return pb::F32;
  if (type.isF16())
    return pb::F16;
  if (type.isBF16())
    return pb::BF16;
  if (type.isInteger(64))
    return pb::I64;
  if (type.isInteger(32))
    return pb::I32;
  if (type.isInteger(1))
    return pb::I1;
  return where->emitOpError("element type ") << type << " has no plan dtype";
}

/// Little-endian bytes of a constant, one element after the other.
static std::string constantBytes(ElementsAttr value) {
  std::string bytes;
  auto append = [&](uint64_t bits, unsigned width) {
    for (unsigned b = 0; b < width / 8; ++b)
      bytes.push_back(static_cast<char>((bits >> (8 * b)) & 0xff));
  };
  auto dense = cast<DenseElementsAttr>(value);
  Type element = dense.getElementType();
  if (isa<FloatType>(element)) {
    unsigned width = element.getIntOrFloatBitWidth();
    for (APFloat v : dense.getValues<APFloat>())
      append(v.bitcastToAPInt().getZExtValue(), width);
  } else {
    unsigned width = std::max(8u, element.getIntOrFloatBitWidth());
    for (APInt v : dense.getValues<APInt>())
      append(v.getZExtValue(), width);
  }
  return bytes;
}

/// Converts a kernel or collective attribute; false if it has no plan form.
static bool convertAttr(Attribute attr, pb::AttrValue &out) {
  if (isa<UnitAttr>(attr)) {
    out.set_b(true);
  } else if (auto b = dyn_cast<BoolAttr>(attr)) {
    out.set_b(b.getValue());
  } else if (auto i = dyn_cast<IntegerAttr>(attr)) {
    out.set_i(i.getValue().getSExtValue());
  } else if (auto f = dyn_cast<FloatAttr>(attr)) {
    out.set_f(f.getValueAsDouble());
  } else if (auto s = dyn_cast<StringAttr>(attr)) {
    out.set_s(s.getValue().str());
  } else if (auto ints = dyn_cast<DenseI64ArrayAttr>(attr)) {
    for (int64_t v : ints.asArrayRef())
      out.mutable_ints()->add_values(v);
  } else if (auto kind = dyn_cast<CompareKindAttr>(attr)) {
    out.set_s(stringifyCompareKind(kind.getValue()).str());
  } else if (auto kind = dyn_cast<ReductionKindAttr>(attr)) {
    out.set_s(stringifyReductionKind(kind.getValue()).str());
  } else if (auto kind = dyn_cast<LossReductionAttr>(attr)) {
    out.set_s(stringifyLossReduction(kind.getValue()).str());
  } else {
    return false;
  }
  return true;
}

/// An imported op's ONNX node ("model.onnx: node 'name'"), else MLIR's
/// spelling of the location.
static std::string locationString(Location loc) {
  if (std::optional<std::string> onnx = describeOnnxLocation(loc))
    return *onnx;
  std::string text;
  llvm::raw_string_ostream os(text);
  loc.print(os);
  return text;
}

LogicalResult mlir::braid::translateExecToPlan(exec::PlanOp op,
                                               const std::string &weightsFile,
                                               pb::Plan &plan) {
  // runtime/plan/PlanLoader.h's kFormatVersion. 3: weights may start as
  // zeros and be state; training plans.
  plan.set_format_version(3);
  for (auto [name, size] :
       llvm::zip(op.getAxisNames(), op.getAxisSizes())) {
    plan.mutable_mesh()->add_axis_names(cast<StringAttr>(name).str());
    plan.mutable_mesh()->add_axis_sizes(size);
  }
  plan.set_arena_bytes(op.getArenaBytes());
  plan.set_num_events(op.getNumEvents());
  if (std::optional<int64_t> sms = op.getCommSms()) {
    if (*sms < 0 || *sms > std::numeric_limits<uint32_t>::max())
      return op.emitOpError("comm_sms ") << *sms << " is out of range";
    plan.set_comm_sms(static_cast<uint32_t>(*sms));
  }
  plan.set_weights_file(weightsFile);
  // The verifier checked the entries' kinds and bindings.
  if (DictionaryAttr training = op.getTrainingAttr()) {
    pb::Training *t = plan.mutable_training();
    t->set_tokens_input(training.getAs<StringAttr>("tokens").str());
    t->set_labels_input(training.getAs<StringAttr>("labels").str());
    t->set_loss_output(training.getAs<StringAttr>("loss").str());
    t->set_batch(training.getAs<IntegerAttr>("batch").getInt());
    t->set_sequence(training.getAs<IntegerAttr>("sequence").getInt());
    if (auto steps = training.getAs<IntegerAttr>("steps"))
      t->set_steps(steps.getInt());
    if (auto algorithm = training.getAs<StringAttr>("algorithm"))
      t->set_algorithm(algorithm.str());
    if (auto ran = training.getAs<StringAttr>("ran"))
      t->set_ran_output(ran.str());
  }
  // Optional groups (braid-to-exec's exec.optional_groups: per group, its
  // until events; instructions name theirs with exec.optional_group).
  if (auto groups = op->getAttrOfType<ArrayAttr>("exec.optional_groups"))
    for (Attribute group : groups) {
      pb::OptionalGroup *g = plan.add_optional_groups();
      for (int64_t event : cast<DenseI64ArrayAttr>(group).asArrayRef())
        g->add_until_events(static_cast<uint32_t>(event));
    }

  llvm::StringMap<uint32_t> ids;
  auto idOf = [&](FlatSymbolRefAttr ref) { return ids.lookup(ref.getValue()); };
  for (auto buffer : op.getBody().front().getOps<exec::BufferOp>()) {
    FailureOr<pb::DType> dtype =
        dtypeOf(buffer, buffer.getTensorType().getElementType());
    if (failed(dtype))
      return failure();
    uint32_t id = ids.size();
    ids[buffer.getSymName()] = id;
    pb::Buffer *b = plan.add_buffers();
    b->set_id(id);
    b->set_offset(buffer.getOffset());
    b->set_dtype(*dtype);
    for (int64_t d : buffer.getTensorType().getShape())
      b->add_shape(d);
  }
  for (Operation &child : op.getBody().front()) {
    if (auto input = dyn_cast<exec::InputOp>(child)) {
      pb::Binding *b = plan.add_inputs();
      b->set_name(input.getName().str());
      b->set_buffer(idOf(input.getBufferAttr()));
    } else if (auto output = dyn_cast<exec::OutputOp>(child)) {
      pb::Binding *b = plan.add_outputs();
      b->set_name(output.getName().str());
      b->set_buffer(idOf(output.getBufferAttr()));
    } else if (auto constant = dyn_cast<exec::ConstantOp>(child)) {
      pb::Constant *c = plan.add_constants();
      c->set_buffer(idOf(constant.getBufferAttr()));
      c->set_data(constantBytes(constant.getValue()));
    } else if (auto weight = dyn_cast<exec::WeightOp>(child)) {
      pb::Weight *w = plan.add_weights();
      w->set_name(weight.getName().str());
      w->set_buffer(idOf(weight.getBufferAttr()));
      for (int64_t d : weight.getFullShape())
        w->add_full_shape(d);
      if (std::optional<ArrayRef<int64_t>> offsets = weight.getBlockOffsets())
        for (int64_t d : *offsets)
          w->add_block_offsets(d);
      if (std::optional<ArrayRef<int64_t>> shape = weight.getBlockShape())
        for (int64_t d : *shape)
          w->add_block_shape(d);
      for (Attribute dim : weight.getSharding()) {
        pb::DimSharding *s = w->add_sharding();
        for (Attribute axis : cast<ArrayAttr>(dim))
          s->add_axes(cast<StringAttr>(axis).str());
      }
      // The verifier allows only "zeros".
      if (weight.getInit())
        w->set_init(pb::ZEROS);
      w->set_state(weight.getState());
    } else if (auto stream = dyn_cast<exec::StreamOp>(child)) {
      pb::Stream *s = plan.add_streams();
      s->set_name(stream.getName().str());
      for (Operation &inst : stream.getBody().front()) {
        pb::Instruction *i = s->add_instructions();
        i->set_location(locationString(inst.getLoc()));
        if (auto group = inst.getAttrOfType<IntegerAttr>("exec.optional_group"))
          i->set_optional_group(static_cast<uint32_t>(group.getInt()));
        i->set_zero_when_skipped(inst.hasAttr("exec.zero_when_skipped"));
        if (auto record = dyn_cast<exec::RecordOp>(inst)) {
          i->set_record_event(record.getEvent());
        } else if (auto wait = dyn_cast<exec::WaitOp>(inst)) {
          i->set_wait_event(wait.getEvent());
        } else if (auto kernel = dyn_cast<exec::KernelOp>(inst)) {
          pb::Kernel *k = i->mutable_kernel();
          k->set_op(kernel.getOp().str());
          for (Attribute in : kernel.getInputs())
            k->add_inputs(idOf(cast<FlatSymbolRefAttr>(in)));
          for (Attribute out : kernel.getOutputs())
            k->add_outputs(idOf(cast<FlatSymbolRefAttr>(out)));
          for (NamedAttribute attr : kernel.getAttrs()) {
            pb::AttrValue value;
            if (!convertAttr(attr.getValue(), value))
              return kernel.emitOpError("attribute '")
                     << attr.getName().getValue() << "' has no plan form";
            (*k->mutable_attrs())[attr.getName().str()] = value;
          }
          for (Attribute entry : kernel.getIndices()) {
            auto items = cast<ArrayAttr>(entry);
            pb::IndexExpr *e = k->add_indices();
            e->set_constant(cast<IntegerAttr>(items[0]).getInt());
            for (size_t t = 1; t + 1 < items.size(); t += 2) {
              e->add_rank_axes(cast<StringAttr>(items[t]).str());
              e->add_rank_coefficients(cast<IntegerAttr>(items[t + 1]).getInt());
            }
          }
          k->set_flops(kernel.getFlops());
          k->set_bytes(kernel.getBytes());
        } else if (auto collective = dyn_cast<exec::CollectiveOp>(inst)) {
          pb::Collective *c = i->mutable_collective();
          c->set_kind(collective.getKind().str());
          for (Attribute axis : collective.getAxes())
            c->add_axes(cast<StringAttr>(axis).str());
          c->set_input(idOf(collective.getInputAttr()));
          c->set_output(idOf(collective.getOutputAttr()));
          for (NamedAttribute attr : collective.getAttrs()) {
            pb::AttrValue value;
            if (!convertAttr(attr.getValue(), value))
              return collective.emitOpError("attribute '")
                     << attr.getName().getValue() << "' has no plan form";
            StringRef name = attr.getName().getValue();
            if (name == "reduction")
              c->set_reduction(value.s());
            else if (name == "dim")
              c->set_dim(value.i());
            else if (name == "split_dim")
              c->set_split_dim(value.i());
            else if (name == "concat_dim")
              c->set_concat_dim(value.i());
            else if (name == "shift")
              c->set_shift(value.i());
            else if (name == "root")
              c->set_root(value.i());
          }
        }
      }
    }
  }
  return success();
}

LogicalResult mlir::braid::writePlanFile(ModuleOp module,
                                         const std::string &path,
                                         const std::string &weightsFile) {
  SmallVector<exec::PlanOp> plans(module.getOps<exec::PlanOp>());
  if (plans.size() != 1)
    return module.emitError("expected one exec.plan, found ")
           << plans.size() << " (run braid-to-exec first)";
  pb::Plan plan;
  if (failed(translateExecToPlan(plans.front(), weightsFile, plan)))
    return failure();
  // Deterministic: attribute maps in key order, so the same IR always gives
  // the same bytes.
  std::string bytes;
  {
    google::protobuf::io::StringOutputStream stream(&bytes);
    google::protobuf::io::CodedOutputStream coded(&stream);
    coded.SetSerializationDeterministic(true);
    if (!plan.SerializeToCodedStream(&coded))
      return module.emitError("cannot serialize the plan");
  }
  std::string error;
  std::unique_ptr<llvm::ToolOutputFile> out = openOutputFile(path, &error);
  if (!out)
    return module.emitError(error);
  out->os() << bytes;
  out->keep();
  return success();
}
