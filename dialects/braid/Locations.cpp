//===- Locations.cpp - where an imported op came from ---------------------===//
//
// Part of the Braid project.
//
//===----------------------------------------------------------------------===//

#include "dialects/braid/Locations.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/MLIRContext.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;
using namespace mlir::braid;

Location mlir::braid::onnxGraphLocation(MLIRContext *context,
                                                     StringRef modelPath,
                                                     StringRef graph) {
  return NameLoc::get(StringAttr::get(context, graph),
                      FileLineColLoc::get(context, modelPath, 0, 0));
}

Location mlir::braid::onnxNodeLocation(Location graphLocation,
                                                    StringRef node) {
  return NameLoc::get(StringAttr::get(graphLocation.getContext(), node),
                      graphLocation);
}

namespace {
/// What an ONNX location (or a fusion of several) says.
struct OnnxPlace {
  std::string model;
  std::string graph;
  llvm::SetVector<StringRef> nodes;
};

/// A model file's location: line and column 0 (ONNX has neither).
std::optional<StringRef> modelFile(Location location) {
  auto file = dyn_cast<FileLineColLoc>(location);
  if (!file || file.getLine() != 0 || file.getColumn() != 0)
    return std::nullopt;
  return file.getFilename().getValue();
}

void collect(Location location, OnnxPlace &place) {
  if (auto fused = dyn_cast<FusedLoc>(location)) {
    for (Location part : fused.getLocations())
      collect(part, place);
    return;
  }
  if (auto call = dyn_cast<CallSiteLoc>(location))
    return collect(call.getCallee(), place);
  if (auto name = dyn_cast<NameLoc>(location)) {
    Location child = name.getChildLoc();
    auto graph = dyn_cast<NameLoc>(child);
    if (graph && modelFile(graph.getChildLoc())) {
      if (place.model.empty()) {
        place.model = modelFile(graph.getChildLoc())->str();
        place.graph = graph.getName().str();
      }
      place.nodes.insert(name.getName().getValue());
      return;
    }
    if (std::optional<StringRef> file = modelFile(child)) {
      if (place.model.empty()) {
        place.model = file->str();
        place.graph = name.getName().str();
      }
      return;
    }
    return collect(child, place);
  }
  if (std::optional<StringRef> file = modelFile(location))
    if (place.model.empty())
      place.model = file->str();
}
} // namespace

std::optional<std::string>
mlir::braid::describeOnnxLocation(Location location) {
  OnnxPlace place;
  collect(location, place);
  if (place.model.empty())
    return std::nullopt;
  std::string text = place.model;
  if (!place.nodes.empty()) {
    text += ": node '" + place.nodes.front().str() + "'";
    if (place.nodes.size() > 1)
      text += " (and " + std::to_string(place.nodes.size() - 1) + " more)";
  } else if (!place.graph.empty()) {
    text += ": graph '" + place.graph + "'";
  }
  return text;
}

static StringRef severityName(DiagnosticSeverity severity) {
  switch (severity) {
  case DiagnosticSeverity::Error:
    return "error";
  case DiagnosticSeverity::Warning:
    return "warning";
  case DiagnosticSeverity::Note:
    return "note";
  case DiagnosticSeverity::Remark:
    return "remark";
  }
  return "error";
}

/// One line: the place (ONNX, or MLIR's own spelling of the location).
static void printDiagnosticLine(llvm::raw_ostream &os, Location location,
                                DiagnosticSeverity severity,
                                const Diagnostic &diagnostic) {
  if (std::optional<std::string> place = describeOnnxLocation(location))
    os << *place;
  else
    os << location;
  os << ": " << severityName(severity) << ": " << diagnostic << "\n";
}

OnnxDiagnosticHandler::OnnxDiagnosticHandler(MLIRContext *context)
    : context(context) {
  id = context->getDiagEngine().registerHandler(
      [](Diagnostic &diagnostic) -> LogicalResult {
        if (!describeOnnxLocation(diagnostic.getLocation()))
          return failure();
        llvm::raw_ostream &os = llvm::errs();
        printDiagnosticLine(os, diagnostic.getLocation(),
                            diagnostic.getSeverity(), diagnostic);
        for (const Diagnostic &note : diagnostic.getNotes())
          printDiagnosticLine(os, note.getLocation(), note.getSeverity(),
                              note);
        os.flush();
        return success();
      });
}

OnnxDiagnosticHandler::~OnnxDiagnosticHandler() {
  context->getDiagEngine().eraseHandler(id);
}
