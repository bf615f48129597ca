#pragma once
// Our own declarations of the slice of the NVML C ABI the agent uses (nvml.h is
// non-free and not on the build machines). Layouts follow the NVML reference;
// the stand-in library in tests/nvml_stub uses this same header.
#ifdef __cplusplus
extern "C" {
#endif

typedef int nvmlReturn_t;
typedef struct nvmlDevice_st* nvmlDevice_t;

enum {
  NVML_SUCCESS = 0,
  NVML_ERROR_UNINITIALIZED = 1,
  NVML_ERROR_INVALID_ARGUMENT = 2,
  NVML_ERROR_NOT_SUPPORTED = 3,
  NVML_ERROR_NO_PERMISSION = 4,
  NVML_ERROR_NOT_FOUND = 6,
  NVML_ERROR_INSUFFICIENT_SIZE = 7,
  NVML_ERROR_DRIVER_NOT_LOADED = 9,
  NVML_ERROR_GPU_IS_LOST = 15,
  NVML_ERROR_ARGUMENT_VERSION_MISMATCH = 25,
  NVML_ERROR_UNKNOWN = 999,
};

typedef struct {
  unsigned long long total, free, used;
} nvmlMemory_t;

typedef struct {
  unsigned int version;
  unsigned long long total, reserved, free, used;
} nvmlMemory_v2_t;
#define TIDAL_NVML_MEMORY_V2_VERSION ((unsigned)(sizeof(nvmlMemory_v2_t) | (2u << 24)))

typedef struct {
  char busIdLegacy[16];
  unsigned int domain, bus, device, pciDeviceId, pciSubSystemId;
  char busId[32];
} nvmlPciInfo_t;

typedef union {
  double dVal;
  unsigned int uiVal;
  unsigned long ulVal;
  unsigned long long ullVal;
  signed long long sllVal;
  int siVal;
  unsigned short usVal;
} nvmlValue_t;

typedef struct {
  unsigned int fieldId;
  unsigned int scopeId;
  long long timestamp;  // µs since the epoch
  long long latencyUsec;
  int valueType;  // 0 double, 1 uint, 2 ulong, 3 ull, 4 sll, 5 sint, 6 ushort
  nvmlReturn_t nvmlReturn;
  nvmlValue_t value;
} nvmlFieldValue_t;

typedef struct {
  unsigned int pid;
  unsigned long long usedGpuMemory;
  unsigned int gpuInstanceId;
  unsigned int computeInstanceId;
} nvmlProcessInfo_t;  // the v2 struct, paired with _v3 (and _v2) of the process calls

enum {
  TIDAL_NVML_FI_NVLINK_SPEED_MBPS_COMMON = 90,
  TIDAL_NVML_FI_NVLINK_THROUGHPUT_DATA_TX = 138,
  TIDAL_NVML_FI_NVLINK_THROUGHPUT_DATA_RX = 139,
};
#define TIDAL_NVML_SCOPE_ALL_LINKS 0xFFFFFFFFu
#define TIDAL_NVML_MAX_LINKS 36
#define TIDAL_NVML_REMOTE_SWITCH 2

#ifdef __cplusplus
}
#endif
