// What the API server's list and watch responses decode into: a watch event
// line, then its object as a Node and as a Pod, a list page, a Status. Each
// either decodes or gives a Status with a reason; a decoded event carries an
// object that is itself valid JSON.
#include <string>

#include "check.h"
#include "tidal/kube/objects.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text = tidal::fuzz::AsText(data, size);
  tidal::kube::WatchEvent ev;
  const tidal::Status st = tidal::kube::DecodeWatchEvent(text, &ev);
  if (st.ok()) {
    TIDAL_FUZZ_CHECK(!ev.object.empty() && ev.object.front() == '{', "the event's object is JSON");
    tidal::KubeNode node;
    if (tidal::kube::DecodeNode(ev.object, &node).ok())
      TIDAL_FUZZ_CHECK(!node.name.empty() && node.allocatable_gpus <= tidal::kMaxGpusPerNode,
                       "a decoded node has a name and a GPU count in range");
    tidal::kube::KubePod pod;
    if (tidal::kube::DecodePod(ev.object, &pod).ok())
      TIDAL_FUZZ_CHECK(!pod.name.empty() && !pod.namespace_name.empty() && pod.gpus >= 0,
                       "a decoded pod has a name, a namespace and no negative GPUs");
  } else {
    TIDAL_FUZZ_CHECK(!st.reason().empty(), "errors say why");
  }
  tidal::KubeNode node;
  if (tidal::kube::DecodeNode(text, &node).ok())
    TIDAL_FUZZ_CHECK(!node.name.empty(), "a decoded node has a name");
  tidal::kube::KubePod pod;
  if (tidal::kube::DecodePod(text, &pod).ok())
    TIDAL_FUZZ_CHECK(!pod.name.empty(), "a decoded pod has a name");
  tidal::kube::ListPage page;
  if (tidal::kube::DecodeList(text, &page).ok())
    for (const auto& item : page.items)
      TIDAL_FUZZ_CHECK(!item.empty() && item.front() == '{', "list items are objects");
  tidal::kube::ApiStatus status;
  if (tidal::kube::DecodeApiStatus(text, &status).ok())
    TIDAL_FUZZ_CHECK(status.code >= 0 && status.code <= 999, "a status code is an HTTP status");
  return 0;
}
