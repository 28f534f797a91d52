"""Backends the machine lacks: which count as absent, and the one line that stands for them."""

from __future__ import annotations

from typing import Any

from kernbench.reporting.availability import absent_backends, present_only


def case(backend: str, status: str = "skipped", kernel: str = "k",
         reason: str = "process 1 of 3: CUDA not available (torch.cuda.is_available() is False)"
         ) -> dict[str, Any]:
    return {"case_id": f"{kernel}[{backend},fp32]", "kernel_name": kernel, "backend": backend,
            "status": status, "reason": reason if status == "skipped" else None}


def test_a_gpu_backend_with_every_case_skipped_and_no_gpu_listed_is_absent() -> None:
    results = [case("cpu", "ok"), case("cuda"), case("cuda", kernel="m"),
               case("cuda", kernel="m", reason="CUDA not available (as an earlier case of this "
                                              "run found)")]
    (absent,) = absent_backends(results, {"gpus": []})
    assert absent.backend == "cuda"
    assert absent.case_ids == ("k[cuda,fp32]", "m[cuda,fp32]", "m[cuda,fp32]")
    assert absent.line == "skipped: CUDA not available on this machine (3 cases of k, m)"
    assert absent.reasons == (("CUDA not available (torch.cuda.is_available() is False)", 2),
                              ("CUDA not available (as an earlier case of this run found)", 1))
    assert present_only(results, [absent]) == [results[0]]


def test_a_backend_is_kept_when_a_case_ran_on_it_or_its_gpu_is_listed() -> None:
    ran = [case("cuda"), case("cuda", "failed")]
    assert absent_backends(ran, {"gpus": []}) == []
    nvidia = {"gpus": [{"name": "NVIDIA H100 80GB HBM3", "vendor": "NVIDIA"}]}
    assert absent_backends([case("cuda")], nvidia) == []
    (rocm,) = absent_backends([case("rocm")], nvidia)  # an NVIDIA machine has no ROCm
    assert rocm.line.startswith("skipped: ROCm not available on this machine (1 case of k)")


def test_the_cpu_and_documents_without_a_gpu_list_are_never_summarised() -> None:
    assert absent_backends([case("cpu")], {"gpus": []}) == []
    assert absent_backends([case("cuda")], {}) == []  # the machine is unknown: show each row
