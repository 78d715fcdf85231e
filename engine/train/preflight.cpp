#include <deepcanvas/errors.h>
#include <deepcanvas/image_data.h>
#include <deepcanvas/next_token.h>
#include <deepcanvas/plan.h>
#include <deepcanvas/preflight.h>
#include <deepcanvas/sequence_data.h>
#include <deepcanvas/settings.h>
#include <deepcanvas/sysinfo.h>

#include <algorithm>
#include <set>

namespace dc {

NetworkShapes network_shapes(const Graph& g) {
  register_builtin_layers();
  g.validate();
  const auto shapes = g.infer_shapes();
  return {*shapes.at(g.inputs().front()).shape, *shapes.at(g.outputs().front()).shape};
}

namespace {

// A grey image set that a recurrent network reads row by row fits as is.
bool fits_input(const Shape& sample, const Shape& in) {
  if (sample == in) return true;
  return in.rank() == 2 && sample.rank() == 3 && sample[0] == 1 && sample[1] == in[0] &&
         sample[2] == in[1];
}

void check_data(const Dataset& d, const char* what, const NetworkShapes& net, bool classification,
                std::vector<RunProblem>& out) {
  const std::string subject = d.source.empty() ? std::string("dataset") : d.source;
  auto data = [&](std::string m, bool warning = false) {
    RunProblem p{RunProblem::Kind::Data, std::move(m), warning};
    p.subject = subject;
    out.push_back(std::move(p));
  };
  const std::string set = std::string("the ") + what + " set";
  if (d.size() == 0) {
    data(set + " is empty");
    return;
  }
  const Shape& s = d.sample_shape;
  if (!fits_input(s, net.input)) {
    const std::string from = d.source.empty() ? "" : " (" + d.source + ")";
    if (d.images && picture_shape(net.input))
      // Image files are read at the Input's shape: what was read before
      // the Input changed is read again, nothing to convert by hand.
      data(set + from + " was read as pictures of " + s.str() + " but the network's Input is " +
           net.input.str() + "; load the dataset again to read them at the Input's shape");
    else if (net.input.rank() == 3 && s.rank() == 3 && s[1] == net.input[1] && s[2] == net.input[2])
      data(set + from + " has images with " + std::to_string(s[0]) +
           " channel(s) but the network's Input expects " + std::to_string(net.input[0]) +
           "; change the Input's shape to " + s.str() + " or use " +
           (net.input[0] == 1 ? "greyscale" : "colour") + " images");
    else
      data(set + from + " has samples of shape " + s.str() + " but the network's Input expects " +
           net.input.str() +
           (net.input.rank() == 3 && s.rank() == 3 && net.input[1] == net.input[2]
                ? "; change the Input's shape, or resize the images to it (dataset.preprocess: "
                  "size " +
                      std::to_string(net.input[1]) +
                      (net.input[0] == 3 && s[0] == 1 ? ", channels 3" : "") + ")"
                : std::string("; change the Input's shape")));
  }
  const bool every_step = scores_every_step(d, net.output);
  if (every_step && !classification && std::string(what) == "training") {
    RunProblem p{RunProblem::Kind::Settings,
                 "the network predicts the next token at every step of the text (its output is " +
                     net.output.str() +
                     "), which trains with softmax_cross_entropy; set training.loss to it"};
    p.subject = "training.loss";
    out.push_back(std::move(p));
  }
  if (!classification) return;
  const int32_t max_label = *std::max_element(d.labels.begin(), d.labels.end());
  const int64_t classes = std::max<int64_t>(d.num_classes, int64_t(max_label) + 1);
  // A network that predicts every step scores the classes at each one.
  const int64_t outputs = scored_classes(net.input, net.output, d.tokens);
  const std::string mismatch =
      set + " has " + std::to_string(classes) + " classes (labels up to " +
      std::to_string(max_label) + ") but the network outputs " + std::to_string(outputs) +
      " values; set the last Dense layer's units to " + std::to_string(classes);
  if (max_label >= outputs)
    data(mismatch);
  else if (classes < outputs && std::string(what) == "training")
    data(mismatch, true);
}

}  // namespace

std::vector<RunProblem> network_problems(const Graph& g, const TrainConfig& c) {
  std::vector<RunProblem> out;
  // The settings one by one rather than through validate(), so that each
  // problem carries its key.
  for (const auto& setting : training_settings())
    if (std::string why = setting_problem(setting, setting.get(c)); !why.empty()) {
      RunProblem p{RunProblem::Kind::Settings,
                   setting.label + " (training." + setting.attr.name + ") " + why};
      p.subject = "training." + setting.attr.name;
      out.push_back(std::move(p));
    }
  NetworkShapes net;
  try {
    net = network_shapes(g);
  } catch (const Error& e) {
    out.push_back(
        {RunProblem::Kind::Network, std::string("the network cannot be built: ") + e.what()});
    return out;
  }
  // Weights, their gradients and two Adam moments must fit before anything
  // is allocated.
  const int64_t params = count_parameters(g), available = available_memory_bytes();
  if (params >= 0 && available >= 0 && params * 16 > available)
    out.push_back({RunProblem::Kind::Network,
                   "the network has " + std::to_string(params) +
                       " parameters, which with their gradients and optimizer state need about " +
                       std::to_string((params * 16) >> 30) + " GiB, more than the " +
                       std::to_string(available >> 30) +
                       " GiB available; make the Input smaller or the Dense layers narrower"});
  if (c.augment.enabled() && net.input.rank() != 3) {
    RunProblem p{RunProblem::Kind::Data,
                 "augmentation (flips, crops, rotation, translation, brightness) needs image "
                 "inputs (channels×height×width) but the network's input is " +
                     net.input.str() + "; turn augmentation off for this model"};
    p.subject = "training.augment";
    out.push_back(std::move(p));
  }
  int n_frozen = 0;
  for (const auto& [id, n] : g.nodes()) n_frozen += n.trainable ? 0 : 1;
  if (n_frozen > 0 && params > 0 && count_parameters(g, true) == 0)
    out.push_back({RunProblem::Kind::Network,
                   "every layer is frozen, so training would change nothing; unfreeze the "
                   "layers to train (Layer → Unfreeze)"});
  if (!c.device.cuda && c.precision != Precision::Fp32) {
    RunProblem p{RunProblem::Kind::Device,
                 std::string("precision ") + enum_name(c.precision) +
                     " needs a CUDA device; the CPU computes in fp32 only (set training.precision "
                     "to fp32 or train on a CUDA device)"};
    p.subject = "training.precision";
    out.push_back(std::move(p));
  }
  return out;
}

std::vector<RunProblem> run_problems(const Graph& g, const TrainConfig& c, const Dataset* train,
                                     const Dataset* test) {
  std::vector<RunProblem> out = network_problems(g, c);
  for (const RunProblem& p : out)
    if (p.kind == RunProblem::Kind::Network) return out;  // no shapes to hold the data against
  const NetworkShapes net = network_shapes(g);
  const bool classification = c.loss == LossType::SoftmaxCrossEntropy;
  if (!train) {
    RunProblem p{RunProblem::Kind::Data, "no dataset is loaded: choose one"};
    p.subject = "dataset";
    out.push_back(std::move(p));
    return out;
  }
  check_data(*train, "training", net, classification, out);
  // Per-channel statistics that do not fit the samples would fail in the
  // first batch's gather; said here, before anything runs.
  try {
    (void)normalisation(*train);
  } catch (const DataError& e) {
    RunProblem p{RunProblem::Kind::Data, e.what()};
    p.subject = train->source.empty() ? std::string("dataset") : train->source;
    out.push_back(std::move(p));
  }
  if (classification && train->size() > 0) {
    const std::set<int32_t> classes(train->labels.begin(), train->labels.end());
    if (classes.size() == 1) {
      const int32_t only = *classes.begin();
      out.push_back({RunProblem::Kind::Data,
                     "the training set has a single class (" +
                         (size_t(only) < train->class_names.size() ? train->class_names[only]
                                                                   : std::to_string(only)) +
                         "); a classifier needs at least two"});
    }
  }
  if (test) check_data(*test, "test", net, classification, out);
  return out;
}

const RunProblem* first_blocking(const std::vector<RunProblem>& problems) {
  for (const RunProblem& p : problems)
    if (!p.warning) return &p;
  return nullptr;
}

void throw_problem(const RunProblem& p) {
  switch (p.kind) {
    case RunProblem::Kind::Network:
      throw GraphError(p.message);
    case RunProblem::Kind::Data:
      throw DataError(p.message);
    case RunProblem::Kind::Output:
      throw IoError(p.message);
    default:
      throw Error(p.message);
  }
}

}  // namespace dc
