"""The part of RunPod's GraphQL schema the simulator answers: root fields with their input type, and
the fields of each output type. The official SDL is not published where it could be read; the lists
come from RunPod's clients (runpod-python 1.12 `api/{queries,mutations}`, runpodctl, dstack, SkyPilot)
and a third-party introspection dump, as collected in shared/api/REFERENCE.md §1.4.

A name absent here is refused the way a GraphQL server refuses it (`Cannot query field ...`,
`Field ... is not defined by type ...`), so a client that relies on a field RunPod does not have
fails here too instead of being answered with whatever the simulator happens to hold."""

from __future__ import annotations

from typing import Final


def _names(words: str) -> list[str]:
    return words.split()


# Output types: field -> nested type name, or None for a scalar (lists and scalars alike).
OUTPUT: Final[dict[str, dict[str, str | None]]] = {
    "Pod": {
        **dict.fromkeys(
            _names(
                "id name desiredStatus imageName env machineId costPerHr adjustedCostPerHr gpuCount podType "
                "bidPerGpu containerDiskInGb volumeInGb volumeMountPath networkVolumeId ports port dataCenterId "
                "lastStatusChange uptimeSeconds dockerArgs dockerId memoryInGb vcpuCount locked"
            )
        ),
        "machine": "Machine",
        "runtime": "PodRuntime",
    },
    "Machine": dict.fromkeys(_names("podHostId gpuDisplayName location gpuTypeId")),
    "PodRuntime": {
        "uptimeInSeconds": None,
        "ports": "PodRuntimePort",
        "gpus": "PodRuntimeGpu",
        "container": "PodRuntimeContainer",
    },
    "PodRuntimePort": dict.fromkeys(_names("ip isIpPublic privatePort publicPort type")),
    "PodRuntimeGpu": dict.fromkeys(_names("id gpuUtilPercent memoryUtilPercent")),
    "PodRuntimeContainer": dict.fromkeys(_names("cpuPercent memoryPercent")),
    "User": {
        **dict.fromkeys(_names("id email clientBalance currentSpendPerHr spendLimit pubKey")),
        "pods": "Pod",
        "networkVolumes": "NetworkVolume",
    },
    "NetworkVolume": dict.fromkeys(_names("id name size dataCenterId")),
    "GpuType": {
        **dict.fromkeys(
            _names(
                "id displayName manufacturer memoryInGb cudaCores maxGpuCount maxGpuCountSecureCloud "
                "maxGpuCountCommunityCloud secureCloud communityCloud securePrice communityPrice secureSpotPrice "
                "communitySpotPrice oneWeekPrice oneMonthPrice threeMonthPrice sixMonthPrice"
            )
        ),
        "lowestPrice": "LowestPrice",
    },
    "LowestPrice": dict.fromkeys(
        _names(
            "minimumBidPrice uninterruptablePrice stockStatus minVcpu minMemory availableGpuCounts "
            "maxUnreservedGpuCount compliance"
        )
    ),
}

_DEPLOY = _names(
    "cloudType gpuTypeId gpuCount imageName name templateId containerDiskInGb volumeInGb volumeMountPath "
    "volumeKey networkVolumeId dataCenterId countryCode minVcpuCount minMemoryInGb minDisk minDownload "
    "minUpload dockerArgs ports port env startSsh startJupyter supportPublicIp stopAfter terminateAfter "
    "cudaVersion allowedCudaVersions aiApiId compliance"
)

# Input types: field names. `env` is a list of EnvironmentVariableInput {key, value}.
INPUT: Final[dict[str, frozenset[str]]] = {
    "PodFindAndDeployOnDemandInput": frozenset(
        _DEPLOY + _names("gpuTypeIdList deployCost savingsPlan instanceIds computeType")
    ),
    "PodRentInterruptableInput": frozenset([*_DEPLOY, "bidPerGpu"]),
    "PodResumeInput": frozenset(_names("podId gpuCount syncMachine computeType allowedCudaVersions")),
    "PodBidResumeInput": frozenset(_names("podId bidPerGpu gpuCount")),
    "PodStopInput": frozenset(_names("podId incrementVersion")),
    "PodTerminateInput": frozenset(["podId"]),
    "PodFilter": frozenset(["podId"]),
    "GpuTypeFilter": frozenset(["id"]),
    "GpuLowestPriceInput": frozenset(
        _names(
            "gpuCount secureCloud countryCode dataCenterId minDisk minMemoryInGb minVcpuCount minDownload "
            "minUpload supportPublicIp totalDisk cudaVersion allowedCudaVersions compliance includeAiApi"
        )
    ),
    "EnvironmentVariableInput": frozenset(["key", "value"]),
}

# Enum-typed input fields: an inline string literal there is refused, as by any GraphQL server.
ENUMS: Final[dict[str, tuple[str, frozenset[str]]]] = {
    "cloudType": ("CloudTypeEnum", frozenset({"SECURE", "COMMUNITY", "ALL"})),
    "computeType": ("ComputeType", frozenset({"GPU", "CPU"})),
}

# Root fields: (operation kind, input type of the `input` argument or None, output type or None).
ROOT: Final[dict[str, tuple[str, str | None, str | None]]] = {
    "podFindAndDeployOnDemand": ("mutation", "PodFindAndDeployOnDemandInput", "Pod"),
    "podRentInterruptable": ("mutation", "PodRentInterruptableInput", "Pod"),
    "podResume": ("mutation", "PodResumeInput", "Pod"),
    "podBidResume": ("mutation", "PodBidResumeInput", "Pod"),
    "podStop": ("mutation", "PodStopInput", "Pod"),
    "podTerminate": ("mutation", "PodTerminateInput", None),  # a scalar: select nothing
    "pod": ("query", "PodFilter", "Pod"),
    "myself": ("query", None, "User"),
    "gpuTypes": ("query", "GpuTypeFilter", "GpuType"),
}

# Arguments of non-root fields: (type, field) -> input type of their `input` argument.
FIELD_INPUT: Final[dict[tuple[str, str], str]] = {("GpuType", "lowestPrice"): "GpuLowestPriceInput"}

# Nested input objects: (input type, field) -> input type of each item.
NESTED_INPUT: Final[dict[tuple[str, str], str]] = {
    (t, "env"): "EnvironmentVariableInput"
    for t in ("PodFindAndDeployOnDemandInput", "PodRentInterruptableInput")
}
