#pragma once
// Pod documents in YAML (yaml-cpp), decoded with the same rules and messages as
// DecodePodJson. A library of its own so that what reads only JSON (the node
// agent, the API client) does not link yaml-cpp.
#include <string_view>

#include "tidal/core/status.h"
#include "tidal/kubetypes/pod.h"

namespace tidal {

Status DecodePodYaml(std::string_view yaml, RawPod* out);

// A whole Pod document: JSON if it starts with '{', YAML otherwise.
Status DecodePodText(std::string_view text, RawPod* out);

}  // namespace tidal
