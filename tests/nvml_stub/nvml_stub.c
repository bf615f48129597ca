/* A stand-in libnvidia-ml.so.1 for tests and benchmarks: the NVML symbols the
 * agent resolves, with values scripted from the file named by the environment
 * variable TIDAL_NVML_STUB_SCRIPT. The file is re-read on every device count
 * call, so a test can change values (or inject errors) between two collections.
 *
 * Script lines ("#" starts a comment):
 *   init_error <code>             nvmlInit fails with code
 *   count_error <code>            nvmlDeviceGetCount fails with code
 *   count <n>                     default: highest gpu index + 1
 *   gpu <i> uuid <text>
 *   gpu <i> name <text to end of line>
 *   gpu <i> bus <pci bus id>
 *   gpu <i> memory <total> <reserved> <used>      bytes
 *   gpu <i> no_memory_v2                            only the v1 memory call works
 *   gpu <i> error <code>                            every call on the device fails
 *   gpu <i> link <l> <remote bus id | switch>       link l active
 *   gpu <i> link_error <code>                       NVLink state calls fail with code
 *   gpu <i> counters <tx KiB> <rx KiB> <timestamp us>
 *   gpu <i> rate <tx KiB/s> <rx KiB/s>              counters advance with the real clock
 *   gpu <i> speed <MB/s>                            per link
 *   gpu <i> field_error <code>                      nvmlDeviceGetFieldValues fails
 *   gpu <i> procs <n>
 *   gpu <i> xid <number>                            one critical-error event (an XID) on GPU i
 *   xid <number>                                    one critical-error event naming no GPU
 *   gpu <i> no_events                               nvmlDeviceRegisterEvents fails (NOT_SUPPORTED)
 *
 * Events (NVML's event API, which the device plugin watches for XIDs): each
 * event set hands out the script's xid lines once each, in the file's order,
 * as nvmlEventSetWait_v2 finds them; appending a line raises a new event. The
 * wait parses the file on its own and never touches the GPU table, because a
 * plugin polls the devices on another thread while it waits. nvmlInit and
 * nvmlShutdown are reference counted, as NVML's are: the plugin's two users of
 * the library (its device polling and its event set) init and shut down apart.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "tidal/gpu/nvml_api.h"

#define MAX_GPUS 64
/* Not in include/tidal/gpu/nvml_api.h (the agent never waits): NVML's value. */
#define STUB_NVML_ERROR_TIMEOUT 10

struct link {
  int active;
  char remote[32]; /* "" for a switch */
  int is_switch;
};

struct gpu {
  int present;
  char uuid[96];
  char name[96];
  char bus[32];
  unsigned long long total, reserved, used;
  int no_memory_v2;
  int error;
  struct link links[TIDAL_NVML_MAX_LINKS];
  int link_error;
  unsigned long long tx, rx;
  long long timestamp_us;
  double tx_rate, rx_rate;
  unsigned speed;
  int field_error;
  unsigned procs;
  int no_events;
};

static struct gpu g_gpus[MAX_GPUS];
static int g_count;
static int g_init_error;
static int g_count_error;
static int g_initialised; /* nvmlInit calls not yet matched by nvmlShutdown */

static void load_script(void) {
  const char* path = getenv("TIDAL_NVML_STUB_SCRIPT");
  memset(g_gpus, 0, sizeof g_gpus);
  g_count = -1;
  g_init_error = 0;
  g_count_error = 0;
  if (!path) {
    g_init_error = NVML_ERROR_DRIVER_NOT_LOADED;
    return;
  }
  FILE* f = fopen(path, "r");
  if (!f) {
    g_init_error = NVML_ERROR_DRIVER_NOT_LOADED;
    return;
  }
  char line[512];
  int max_index = -1;
  while (fgets(line, sizeof line, f)) {
    line[strcspn(line, "\r\n")] = 0;
    char* hash = strchr(line, '#');
    if (hash) *hash = 0;
    int i = 0, n = 0;
    char key[32] = {0};
    if (sscanf(line, "init_error %d", &g_init_error) == 1) continue;
    if (sscanf(line, "count_error %d", &g_count_error) == 1) continue;
    if (sscanf(line, "count %d", &g_count) == 1) continue;
    if (sscanf(line, "gpu %d %31s %n", &i, key, &n) < 2 || i < 0 || i >= MAX_GPUS) continue;
    struct gpu* g = &g_gpus[i];
    const char* rest = line + n;
    g->present = 1;
    if (i > max_index) max_index = i;
    if (!strcmp(key, "uuid")) {
      snprintf(g->uuid, sizeof g->uuid, "%s", rest);
    } else if (!strcmp(key, "name")) {
      snprintf(g->name, sizeof g->name, "%s", rest);
    } else if (!strcmp(key, "bus")) {
      snprintf(g->bus, sizeof g->bus, "%s", rest);
    } else if (!strcmp(key, "memory")) {
      sscanf(rest, "%llu %llu %llu", &g->total, &g->reserved, &g->used);
    } else if (!strcmp(key, "no_memory_v2")) {
      g->no_memory_v2 = 1;
    } else if (!strcmp(key, "error")) {
      sscanf(rest, "%d", &g->error);
    } else if (!strcmp(key, "link")) {
      int l = 0;
      char remote[32] = {0};
      if (sscanf(rest, "%d %31s", &l, remote) == 2 && l >= 0 && l < TIDAL_NVML_MAX_LINKS) {
        g->links[l].active = 1;
        g->links[l].is_switch = !strcmp(remote, "switch");
        snprintf(g->links[l].remote, sizeof g->links[l].remote, "%s",
                 g->links[l].is_switch ? "" : remote);
      }
    } else if (!strcmp(key, "link_error")) {
      sscanf(rest, "%d", &g->link_error);
    } else if (!strcmp(key, "counters")) {
      sscanf(rest, "%llu %llu %lld", &g->tx, &g->rx, &g->timestamp_us);
    } else if (!strcmp(key, "rate")) {
      sscanf(rest, "%lf %lf", &g->tx_rate, &g->rx_rate);
    } else if (!strcmp(key, "speed")) {
      sscanf(rest, "%u", &g->speed);
    } else if (!strcmp(key, "field_error")) {
      sscanf(rest, "%d", &g->field_error);
    } else if (!strcmp(key, "procs")) {
      sscanf(rest, "%u", &g->procs);
    } else if (!strcmp(key, "no_events")) {
      g->no_events = 1;
    }
  }
  fclose(f);
  if (g_count < 0) g_count = max_index + 1;
}

static struct gpu* dev(nvmlDevice_t d) { return (struct gpu*)d; }

nvmlReturn_t nvmlInit_v2(void) {
  load_script();
  if (g_init_error) return g_init_error;
  ++g_initialised;
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlShutdown(void) {
  if (g_initialised == 0) return NVML_ERROR_UNINITIALIZED;
  --g_initialised;
  return NVML_SUCCESS;
}

const char* nvmlErrorString(nvmlReturn_t r) {
  switch (r) {
    case NVML_SUCCESS:
      return "Success";
    case NVML_ERROR_NOT_SUPPORTED:
      return "Not Supported";
    case NVML_ERROR_GPU_IS_LOST:
      return "GPU is lost";
    case NVML_ERROR_DRIVER_NOT_LOADED:
      return "Driver Not Loaded";
    case STUB_NVML_ERROR_TIMEOUT:
      return "Timeout";
    case NVML_ERROR_UNKNOWN:
      return "Unknown Error";
    default:
      return "Error";
  }
}

nvmlReturn_t nvmlDeviceGetCount_v2(unsigned* count) {
  if (!g_initialised) return NVML_ERROR_UNINITIALIZED;
  load_script();
  if (g_count_error) return g_count_error;
  *count = (unsigned)g_count;
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned index, nvmlDevice_t* d) {
  if (index >= (unsigned)g_count || index >= MAX_GPUS) return NVML_ERROR_INVALID_ARGUMENT;
  *d = (nvmlDevice_t)&g_gpus[index];
  return NVML_SUCCESS;
}

#define CHECK(d)                                         \
  do {                                                   \
    if (dev(d)->error) return dev(d)->error;             \
    if (!dev(d)->present) return NVML_ERROR_GPU_IS_LOST; \
  } while (0)

nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t d, char* buf, unsigned len) {
  CHECK(d);
  snprintf(buf, len, "%s", dev(d)->uuid);
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t d, char* buf, unsigned len) {
  CHECK(d);
  snprintf(buf, len, "%s", dev(d)->name);
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetPciInfo_v3(nvmlDevice_t d, nvmlPciInfo_t* p) {
  CHECK(d);
  memset(p, 0, sizeof *p);
  snprintf(p->busId, sizeof p->busId, "%s", dev(d)->bus);
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t d, nvmlMemory_t* m) {
  CHECK(d);
  /* v1 counts reserved memory as used. */
  m->total = dev(d)->total;
  m->used = dev(d)->used + dev(d)->reserved;
  m->free = m->total > m->used ? m->total - m->used : 0;
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetMemoryInfo_v2(nvmlDevice_t d, nvmlMemory_v2_t* m) {
  CHECK(d);
  if (dev(d)->no_memory_v2) return NVML_ERROR_NOT_SUPPORTED;
  if (m->version != TIDAL_NVML_MEMORY_V2_VERSION) return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
  m->total = dev(d)->total;
  m->reserved = dev(d)->reserved;
  m->used = dev(d)->used;
  m->free = m->total > m->used + m->reserved ? m->total - m->used - m->reserved : 0;
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetNvLinkState(nvmlDevice_t d, unsigned link, int* active) {
  CHECK(d);
  if (dev(d)->link_error) return dev(d)->link_error;
  if (link >= TIDAL_NVML_MAX_LINKS) return NVML_ERROR_INVALID_ARGUMENT;
  *active = dev(d)->links[link].active;
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetNvLinkRemotePciInfo_v2(nvmlDevice_t d, unsigned link, nvmlPciInfo_t* p) {
  CHECK(d);
  if (link >= TIDAL_NVML_MAX_LINKS || !dev(d)->links[link].active)
    return NVML_ERROR_INVALID_ARGUMENT;
  memset(p, 0, sizeof *p);
  snprintf(p->busId, sizeof p->busId, "%s", dev(d)->links[link].remote);
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetNvLinkRemoteDeviceType(nvmlDevice_t d, unsigned link, int* type) {
  CHECK(d);
  if (link >= TIDAL_NVML_MAX_LINKS || !dev(d)->links[link].active)
    return NVML_ERROR_INVALID_ARGUMENT;
  *type = dev(d)->links[link].is_switch ? TIDAL_NVML_REMOTE_SWITCH : 0;
  return NVML_SUCCESS;
}

static long long now_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (long long)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

nvmlReturn_t nvmlDeviceGetFieldValues(nvmlDevice_t d, int count, nvmlFieldValue_t* v) {
  CHECK(d);
  if (dev(d)->field_error) return dev(d)->field_error;
  const int real_time = dev(d)->timestamp_us == 0;
  const long long ts = real_time ? now_us() : dev(d)->timestamp_us;
  for (int i = 0; i < count; ++i) {
    v[i].timestamp = ts;
    v[i].latencyUsec = 0;
    v[i].nvmlReturn = NVML_SUCCESS;
    switch (v[i].fieldId) {
      case TIDAL_NVML_FI_NVLINK_THROUGHPUT_DATA_TX:
        v[i].valueType = 3;
        v[i].value.ullVal = dev(d)->tx + (unsigned long long)(dev(d)->tx_rate * (double)ts / 1e6);
        break;
      case TIDAL_NVML_FI_NVLINK_THROUGHPUT_DATA_RX:
        v[i].valueType = 3;
        v[i].value.ullVal = dev(d)->rx + (unsigned long long)(dev(d)->rx_rate * (double)ts / 1e6);
        break;
      case TIDAL_NVML_FI_NVLINK_SPEED_MBPS_COMMON:
        v[i].valueType = 1;
        if (dev(d)->speed) {
          v[i].value.uiVal = dev(d)->speed;
        } else {
          v[i].nvmlReturn = NVML_ERROR_NOT_SUPPORTED;
        }
        break;
      default:
        v[i].nvmlReturn = NVML_ERROR_NOT_SUPPORTED;
    }
  }
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v3(nvmlDevice_t d, unsigned* count,
                                                     nvmlProcessInfo_t* infos) {
  CHECK(d);
  const unsigned n = dev(d)->procs;
  if (*count < n) {
    *count = n;
    return NVML_ERROR_INSUFFICIENT_SIZE;
  }
  for (unsigned i = 0; i < n; ++i) {
    infos[i].pid = 1000 + i;
    infos[i].usedGpuMemory = 1ull << 30;
    infos[i].gpuInstanceId = 0xFFFFFFFFu;
    infos[i].computeInstanceId = 0xFFFFFFFFu;
  }
  *count = n;
  return NVML_SUCCESS;
}

/* NVML's event API: the declarations as NVML's header has them. */
#define NVML_EVENT_TYPE_XID_CRITICAL_ERROR 0x8ULL

typedef struct {
  nvmlDevice_t device;
  unsigned long long eventType;
  unsigned long long eventData;
  unsigned gpuInstanceId;
  unsigned computeInstanceId;
} nvmlEventData_t;

struct nvmlEventSet_st {
  unsigned long long registered; /* bit i: GPU i's XIDs */
  int delivered;                 /* xid lines of the script handed out so far */
};
typedef struct nvmlEventSet_st* nvmlEventSet_t;

nvmlReturn_t nvmlEventSetCreate(nvmlEventSet_t* set) {
  if (!g_initialised) return NVML_ERROR_UNINITIALIZED;
  *set = calloc(1, sizeof **set);
  return *set ? NVML_SUCCESS : NVML_ERROR_UNKNOWN;
}

nvmlReturn_t nvmlEventSetFree(nvmlEventSet_t set) {
  free(set);
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceRegisterEvents(nvmlDevice_t d, unsigned long long types,
                                      nvmlEventSet_t set) {
  CHECK(d);
  if (dev(d)->no_events) return NVML_ERROR_NOT_SUPPORTED;
  if (types & NVML_EVENT_TYPE_XID_CRITICAL_ERROR) set->registered |= 1ULL << (dev(d) - g_gpus);
  return NVML_SUCCESS;
}

/* The n-th xid line of the script (from 0): 1 with its GPU (-1 for none) and
 * number, 0 when the script has fewer. */
static int nth_xid(int n, int* gpu, unsigned long long* xid) {
  const char* path = getenv("TIDAL_NVML_STUB_SCRIPT");
  FILE* f = path ? fopen(path, "r") : NULL;
  if (!f) return 0;
  char line[512];
  int seen = 0, found = 0;
  while (!found && fgets(line, sizeof line, f)) {
    char* hash = strchr(line, '#');
    if (hash) *hash = 0;
    int i = -1;
    unsigned long long x = 0;
    if (sscanf(line, "gpu %d xid %llu", &i, &x) != 2 && sscanf(line, "xid %llu", &x) != 1) continue;
    if (seen++ == n) {
      *gpu = i;
      *xid = x;
      found = 1;
    }
  }
  fclose(f);
  return found;
}

nvmlReturn_t nvmlEventSetWait_v2(nvmlEventSet_t set, nvmlEventData_t* data, unsigned timeout_ms) {
  const long long deadline = now_us() + (long long)timeout_ms * 1000;
  while (1) {
    int gpu = -1;
    unsigned long long xid = 0;
    while (nth_xid(set->delivered, &gpu, &xid)) {
      ++set->delivered;
      /* Like NVML, only events of the GPUs registered in this set. */
      if (gpu >= MAX_GPUS || (gpu >= 0 && !(set->registered >> gpu & 1ULL))) continue;
      memset(data, 0, sizeof *data);
      data->device = gpu >= 0 ? (nvmlDevice_t)&g_gpus[gpu] : NULL;
      data->eventType = NVML_EVENT_TYPE_XID_CRITICAL_ERROR;
      data->eventData = xid;
      return NVML_SUCCESS;
    }
    if (now_us() >= deadline) return STUB_NVML_ERROR_TIMEOUT;
    usleep(10000);
  }
}
