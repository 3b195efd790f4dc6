"""The job-type registry is a pure refactor: every job type's estimate and knob search give the
numbers the parallel tables gave (recorded from commit 8412dae0868eb1fe7e8c7eb700370bcc05a931b2,
before the refactor, by running that commit's estimates.py over estimates_identity_cases.CASES)."""

from __future__ import annotations

import hashlib
import json

import pytest

from embedprobe.memory import estimate as estimates

from helpers.estimates_identity_cases import CASES, all_outcomes, summary

# Recorded from commit 8412dae (before JobType): (estimate total, total after fit_knobs, its
# request MB, verdict, device total, knobs, sha256[:16] of the whole outcome as JSON).
RECORDED = {
    "aggregate_subject_mean/chunk over rows/defaults": (
        519995904, 492421632, 541, "too_big", None,
        {"chunk_rows": 1024}, "6a160bc4f4f7197d"),
    "aggregate_subject_mean/chunk over rows/table": (
        508868304, 492691398, 541, "too_big", None,
        {"chunk_rows": 1024}, "8d628aa537085fc4"),
    "aggregate_subject_mean/sleep-edf/defaults": (
        382109696, 382109696, 420, "ok", None,
        {"chunk_rows": 65536}, "083533847efdec20"),
    "aggregate_subject_mean/sleep-edf/table": (
        330294705, 330294705, 363, "ok", None,
        {"chunk_rows": 65536}, "c701c1677bbb771d"),
    "embed_cpu/biot 8 h/defaults": (
        1844864128, 1282348032, 1407, "too_big", None,
        {"batch_size": 1, "n_workers": 0}, "530727f8c7a8c19c"),
    "embed_cpu/biot 8 h/table": (
        858650056, 858650056, 942, "ok", None,
        {"batch_size": 32, "n_workers": 2}, "aaa2d2e722bef73a"),
    "embed_cpu/defaults filled/defaults": (
        1251904128, 1251904128, 1373, "ok", None,
        {"batch_size": 32, "n_workers": 0}, "be51728a53d5c9a7"),
    "embed_cpu/defaults filled/table": (
        750359496, 750359496, 823, "ok", None,
        {"batch_size": 32, "n_workers": 0}, "566b72eacb04263f"),
    "embed_cpu/no readers, measured, cluster/defaults": (
        1571916288, 1394382848, 1530, "too_big", None,
        {"batch_size": 4, "n_workers": 0}, "9ebd659f7bb7b6b6"),
    "embed_cpu/no readers, measured, cluster/table": (
        1240418571, 1049819874, 1152, "too_big", None,
        {"batch_size": 4, "n_workers": 0}, "769a28e87f0ab081"),
    "embed_gpu/below the smallest measured/defaults": (
        3576704896, 3576704896, 3923, "ok", 2043464909,
        {"batch_size": 1, "n_workers": 4}, "4d94e6446c4de8c0"),
    "embed_gpu/below the smallest measured/table": (
        5187317632, 5187317632, 5690, "ok", 1917635789,
        {"batch_size": 1, "n_workers": 4}, "0075262fbe25be01"),
    "embed_gpu/reserved peaks, context/defaults": (
        3601446016, 3601446016, 3950, "ok", 9699747431,
        {"batch_size": 256, "n_workers": 4}, "d4c001648a953dfe"),
    "embed_gpu/reserved peaks, context/table": (
        5212058752, 5212058752, 5717, "ok", 9699747431,
        {"batch_size": 256, "n_workers": 4}, "3f6b3f59024f9224"),
    "embed_gpu/small gpu/defaults": (
        3601446016, 3582817408, 3930, "ok", 3331955098,
        {"batch_size": 64, "n_workers": 4}, "f3f08b908f171952"),
    "embed_gpu/small gpu/table": (
        5212058752, 5193430144, 5696, "ok", 3206125978,
        {"batch_size": 64, "n_workers": 4}, "b8e2da6e8bcbc05c"),
    "embed_gpu_device/allocated peaks/defaults": (
        10035171914, 10035171914, 11006, "ok", None,
        {"batch_size": 256}, "0c72512017cf1a94"),
    "embed_gpu_device/allocated peaks/table": (
        9909342794, 9909342794, 10868, "ok", None,
        {"batch_size": 256}, "17fe2c44b22c6c0e"),
    "embed_gpu_device/reserved peaks/defaults": (
        9720718951, 2154418232, 2363, "ok", None,
        {"batch_size": 32}, "a6be95e0fe2fa885"),
    "embed_gpu_device/reserved peaks/table": (
        9594889831, 2028589112, 2225, "ok", None,
        {"batch_size": 32}, "7979ffac834e815c"),
    "probe_brain_age/78 subjects/defaults": (
        487409728, 487409728, 535, "ok", None,
        {"n_jobs": 1, "ridge_form": "dual"}, "e4582a85735a83e2"),
    "probe_brain_age/78 subjects/table": (
        309019426, 309019426, 339, "ok", None,
        {"n_jobs": 1, "ridge_form": "primal"}, "ff39bcc5b9a93ccf"),
    "probe_brain_age/wide, forced/defaults": (
        45148066816, 20124066816, 22071, "ok", None,
        {"n_jobs": 4, "ridge_form": "dual"}, "feacffd89ca5bdba"),
    "probe_brain_age/wide, forced/table": (
        10393031744, 10393031744, 11399, "ok", None,
        {"n_jobs": 4, "ridge_form": "primal"}, "b54e7c8725cf0891"),
    "probe_logistic/float64, measured, cluster/defaults": (
        1568844640, 1528984864, 1677, "too_big", None,
        {"n_jobs": 1}, "ae9062d6eb172a60"),
    "probe_logistic/float64, measured, cluster/table": (
        1811331594, 1564751818, 1717, "too_big", None,
        {"n_jobs": 1}, "8b5bf881421dc40b"),
    "probe_logistic/six fits at once/defaults": (
        6011773120, 6011773120, 6594, "ok", None,
        {"n_jobs": 6}, "001201995e8cd2ba"),
    "probe_logistic/six fits at once/table": (
        7019942260, 7019942260, 7699, "ok", None,
        {"n_jobs": 6}, "e8d20f1818f6c4fe"),
    "probe_logistic/staging fold/defaults": (
        929599552, 929599552, 1020, "ok", None,
        {"n_jobs": 2}, "fa0b596e59bd2903"),
    "probe_logistic/staging fold/table": (
        994867434, 994867434, 1092, "ok", None,
        {"n_jobs": 2}, "88b178ed81157099"),
    "probe_ridge/forced primal, wide/defaults": (
        119616716800, 4544716800, 4985, "ok", None,
        {"n_jobs": 2, "ridge_form": "dual"}, "43881fd2dd9c980b"),
    "probe_ridge/forced primal, wide/table": (
        276790079488, 6279167488, 6887, "ok", None,
        {"n_jobs": 2, "ridge_form": "dual"}, "19d9cd6005f4a4e9"),
    "probe_ridge/tall (primal)/defaults": (
        2785148928, 1491992576, 1637, "too_big", None,
        {"n_jobs": 1, "ridge_form": "primal"}, "fa6099871582d822"),
    "probe_ridge/tall (primal)/table": (
        3447635149, 2151647642, 2360, "too_big", None,
        {"n_jobs": 1, "ridge_form": "primal"}, "ab500c8db9851f20"),
    "probe_ridge/wide (dual)/defaults": (
        300646400, 300646400, 330, "ok", None,
        {"n_jobs": 1, "ridge_form": "dual"}, "c29f8bc095640f8c"),
    "probe_ridge/wide (dual)/table": (
        241536359, 241536359, 265, "ok", None,
        {"n_jobs": 1, "ridge_form": "dual"}, "1849d1573f0b71c8"),
}


# Deliberate formula changes since the refactor: the subject-mean stream counts h5py's default
# chunk caches (1 MiB for each of the two datasets it reads), no more than the store holds,
# where it counted embed's 16 MiB. Every case's store is over 2 MiB, so both totals of every
# case of the two job types fall by exactly 14 MiB and knobs and verdicts stay; only the
# request (MB) and the outcome's hash are new.
CACHE_CHANGE = (16 - 2) * 2**20
CHANGED = {  # case -> (request MB, sha256[:16] of the outcome)
    "aggregate_subject_mean/chunk over rows/defaults": (524, "ab768e41c029374a"),
    "aggregate_subject_mean/chunk over rows/table": (525, "b0fbccf2554fc4bd"),
    "aggregate_subject_mean/sleep-edf/defaults": (403, "d6f2a618d6d5a5c0"),
    "aggregate_subject_mean/sleep-edf/table": (347, "f9442bf27fd3e535"),
    "probe_brain_age/78 subjects/defaults": (519, "46b53f312451a551"),
    "probe_brain_age/78 subjects/table": (323, "158a7befc6e300ae"),
    "probe_brain_age/wide, forced/defaults": (22055, "f71286355dd8ec7f"),
    "probe_brain_age/wide, forced/table": (11383, "92be74b40529bfb2"),
}


# Embed keeps one part more in flight than it has readers (window_parts.in_flight): the
# estimate holds one more part's windows (960 windows x 2 channels x 6000 samples, float32)
# wherever the readers are counted (its total; its fitted total where the fit kept readers).
# Knobs and verdicts stay; every case's outcome names the new term.
PART_AHEAD = 960 * 2 * 6000 * 4
# case -> for each calibration (defaults, table): (request MB, sha256[:16] of the outcome,
# parts in its total, in its fitted total)
EMBED_CHANGED = {
    "embed_cpu/biot 8 h": ((1407, "ed296b97e369f315", 1, 0), (993, "c49dbf06884c2b66", 1, 1)),
    "embed_cpu/defaults filled": ((1373, "31a196575deab879", 0, 0),
                                  (823, "5bd1eb5965784712", 0, 0)),
    "embed_cpu/no readers, measured, cluster": ((1530, "0d4a1a6509478909", 0, 0),
                                                (1152, "41d3600d917afa84", 0, 0)),
    "embed_gpu/below the smallest measured": ((3974, "a091e284282d5db9", 1, 1),
                                              (5740, "6a4fec83a8b562ac", 1, 1)),
    "embed_gpu/reserved peaks, context": ((4001, "2b02877cd43c0472", 1, 1),
                                          (5767, "6be6adf66c0938e6", 1, 1)),
    "embed_gpu/small gpu": ((3980, "388f30075b83dffa", 1, 1), (5747, "76f91bf6fc602ef3", 1, 1)),
}
CALIBRATIONS = ("defaults", "table")


def page_locked(batch: int) -> int:
    """Batches staged in page-locked memory, in (2 channels x 6000 samples) and out (256
    features), each block rounded up to a power of two as torch's pinned-memory cache does:
    two under way and the last, smaller batch's."""
    def ceil2(n: int) -> int:
        return 1 << (n - 1).bit_length()
    return 3 * (ceil2(batch * 2 * 6000 * 4) + ceil2(batch * 256 * 4))


# A GPU job stores each batch while the device computes the next (Encoder.launch): the host
# holds three batches' page-locked copies (two under way, the cached blocks of the last).
# Every embed_gpu case moves by exactly that at its batch (the fit's batch for the fitted
# total); knobs and verdicts stay.
# case -> (batch of the total, of the fitted total, and per calibration: request MB, digest)
GPU_PAGE_LOCKED = {
    "embed_gpu/below the smallest measured": (1, 1, ((3974, "c8d09b94ea42f3f2"),
                                                     (5740, "33509334e01e8b2b"))),
    "embed_gpu/reserved peaks, context": (256, 256, ((4057, "40fa870ee28cc0be"),
                                                     (5823, "2c9392423039a51e"))),
    "embed_gpu/small gpu": (256, 64, ((3994, "7274839a4cdd03b1"), (5761, "60116f61d5ce4fe1"))),
}


# Reference preprocessing (the readers filter, BIOT reads a recording statistic first): the
# parts in flight and being batched are one term, each part as its windows (every model
# input: BIOT's 16 slots from 2 channels read) or, while its reader makes it, the signal it
# reads and filters where that is larger, over the index's consecutive parts where preflight
# gives them (here: every part as large as the largest); the embed inputs carry
# statistic_bytes (0 unless given). In every case here the signal outgrows the windows (2
# inputs) and there is no statistic: every number stays; only the terms' names and the
# inputs in the outcome, and so its hash, are new.
# case/calibration -> sha256[:16] of the outcome
READERS_CHANGED = {
    "embed_cpu/biot 8 h/defaults": "95e4ce093461dfcd",
    "embed_cpu/biot 8 h/table": "0af4929f99439958",
    "embed_cpu/defaults filled/defaults": "92b69a5a21e3be2f",
    "embed_cpu/defaults filled/table": "7937ced6dacd6534",
    "embed_cpu/no readers, measured, cluster/defaults": "66e5bc210cb3dea8",
    "embed_cpu/no readers, measured, cluster/table": "22bfe03610cef1be",
    "embed_gpu/below the smallest measured/defaults": "aa24e9d7aab20911",
    "embed_gpu/below the smallest measured/table": "9cdecfcead608282",
    "embed_gpu/reserved peaks, context/defaults": "d547b9703a63b283",
    "embed_gpu/reserved peaks, context/table": "db8b7c178e68e25a",
    "embed_gpu/small gpu/defaults": "55f7aaec025b8602",
    "embed_gpu/small gpu/table": "070bdbc7a805859b",
    "embed_gpu_device/allocated peaks/defaults": "fb635b832ff72cfa",
    "embed_gpu_device/allocated peaks/table": "1273ff48d70e4ce1",
    "embed_gpu_device/reserved peaks/defaults": "6b2541504d3a0d84",
    "embed_gpu_device/reserved peaks/table": "8c88108ac32e5c8b",
}


# The store's finish() reads the rows back in 16 MiB blocks after the last batch, and the window
# table to check the final file: the HDF5 term counts the larger of a batch of rows and 1.5
# blocks (the block, its check, h5py's write) with finish_row_bytes a window (300 by default,
# the table filling it), and every embed outcome's inputs carry finish_block_bytes (so every
# digest is new). Each store here (200,000 windows x 256) outgrows a block, so each total grows
# by 1.5 blocks and 200,000 x 300 bytes less its batch of rows; "defaults filled" gives no
# window count (nothing). The 8-hour BIOT job on the table's constants no longer fits its
# limit at batch 32 and the knob search halves it. case/calibration -> (request MB, knobs,
# digest)
FINISH_CHANGED = {
    "embed_cpu/biot 8 h/defaults": (1500, {"batch_size": 1, "n_workers": 0}, "5df12318315a5f57"),
    "embed_cpu/biot 8 h/table": (996, {"batch_size": 16, "n_workers": 2}, "d7892250650f1ca3"),
    "embed_cpu/defaults filled/defaults": (1373, {"batch_size": 32, "n_workers": 0},
                                           "14d0fcd4a306c654"),
    "embed_cpu/defaults filled/table": (823, {"batch_size": 32, "n_workers": 0},
                                        "048692aaa12b52d6"),
    "embed_cpu/no readers, measured, cluster/defaults": (1623, {"batch_size": 4, "n_workers": 0},
                                                         "c9dccf38db2d7fcc"),
    "embed_cpu/no readers, measured, cluster/table": (1245, {"batch_size": 4, "n_workers": 0},
                                                      "c0db9ff858c0541c"),
    "embed_gpu/below the smallest measured/defaults": (4067, {"batch_size": 1, "n_workers": 4},
                                                       "f87e303a5abb47f5"),
    "embed_gpu/below the smallest measured/table": (5834, {"batch_size": 1, "n_workers": 4},
                                                    "0947777c89def3cb"),
    "embed_gpu/reserved peaks, context/defaults": (4150, {"batch_size": 256, "n_workers": 4},
                                                   "ca8b9d413446f793"),
    "embed_gpu/reserved peaks, context/table": (5916, {"batch_size": 256, "n_workers": 4},
                                                "82430ad0323d703f"),
    "embed_gpu/small gpu/defaults": (4088, {"batch_size": 64, "n_workers": 4}, "ebc2fe38f9cd86ac"),
    "embed_gpu/small gpu/table": (5854, {"batch_size": 64, "n_workers": 4}, "8a816683070f10cb"),
    "embed_gpu_device/allocated peaks/defaults": (11006, {"batch_size": 256}, "4013227e8dee7cad"),
    "embed_gpu_device/allocated peaks/table": (10868, {"batch_size": 256}, "1cca48f7a28ab20b"),
    "embed_gpu_device/reserved peaks/defaults": (2363, {"batch_size": 32}, "33e583471fd240d4"),
    "embed_gpu_device/reserved peaks/table": (2225, {"batch_size": 32}, "f98c9af7e192c473"),
}
FINISH_BLOCK = 16 * 2**20
FINISH_ROW_BYTES = 300  # the default; neither calibration of these cases gives its own


def finish_growth(case: str, batch: int) -> int:
    """1.5 finish blocks and the window table's 200,000 rows beyond a batch of 256-wide rows,
    on the host side of a store that outgrows a block."""
    if case.startswith("embed_gpu_device") or case.endswith("defaults filled"):
        return 0
    return int(1.5 * FINISH_BLOCK) + 200_000 * FINISH_ROW_BYTES - batch * 256 * 4


def case_batch(key: str) -> int:
    job, label, calibration = key.split("/")
    return next(inputs["batch_size"] for j, lab, inputs, _ in CASES if (j, lab) == (job, label))


# The memory settings nested under `memory:`: two fix texts name the setting (numbers
# unchanged). Case -> the outcome's digest now.
MEMORY_KEYS_NAMED = {
    "aggregate_subject_mean/chunk over rows/defaults": "52a48e74c4586fe8",
    "aggregate_subject_mean/chunk over rows/table": "0f8cd73335424125",
    "embed_cpu/biot 8 h/defaults": "f6254f07416933d9",
    "embed_cpu/no readers, measured, cluster/defaults": "a0499270696e4dd7",
    "embed_cpu/no readers, measured, cluster/table": "28d40b0d50ad1c0b",
    "probe_logistic/float64, measured, cluster/defaults": "a63e44b03089f90b",
    "probe_logistic/float64, measured, cluster/table": "2d25e8f164dc5b39",
    "probe_ridge/tall (primal)/defaults": "f22bdeaa500227b3",
    "probe_ridge/tall (primal)/table": "fcbab682a8f5c8b6",
}
# Each text as it was before, and as it is: put back, they give the digests before.
FIX_TEXTS_BEFORE = {
    "in the profile and memory.limit_mb to": "in the profile and the largest memory to",
    "add one that does to the config's memory.partitions, or":
        "add one that does to the config, or",
}


# The recording statistic streamed in part-sized stretches (issue 53): the host embed job
# types' parts-held term says so in its name; every number stays. Case -> the digest now.
STATISTIC_STREAMED = {
    "embed_cpu/biot 8 h/defaults": "b4c1e286e87b058d",
    "embed_cpu/biot 8 h/table": "86e50f73bf3a78bb",
    "embed_cpu/defaults filled/defaults": "aecc3bdf40d2baba",
    "embed_cpu/defaults filled/table": "00b49decc96c5415",
    "embed_cpu/no readers, measured, cluster/defaults": "4f1983158e311af3",
    "embed_cpu/no readers, measured, cluster/table": "89e0185105ac9458",
    "embed_gpu/below the smallest measured/defaults": "b03b033a7e048fae",
    "embed_gpu/below the smallest measured/table": "6642a8f4213958d2",
    "embed_gpu/reserved peaks, context/defaults": "c1f946a5f2b9e240",
    "embed_gpu/reserved peaks, context/table": "9948b8d654ef51e7",
    "embed_gpu/small gpu/defaults": "85becdd12673263f",
    "embed_gpu/small gpu/table": "fbcf21403edd2f73",
}
# The term's words as they are, and as they were.
TERM_NAME_BEFORE = {"a recording's statistic streams it in part-sized stretches first":
                    "a recording's statistic reads it whole first"}

# The staging probe at cohort scale (issue 53): the fold job reads its parts once
# (store.read_parts: one copy of the fold's rows, embeddings_copies structural 1, where the
# whole store was loaded and cut) and standardises the training part in place (no
# standardised copy); the store block being read is a term; a new knob, `streamed` (the rows
# left in the store), which the knob search tries after one fit at a time; the table's
# constants refitted (docs/measurements/2026-12-07-probe-scale.md). Every probe_logistic
# outcome is new: case -> (total, fitted total, request MB, verdict, device, knobs, digest).
PROBE_FOLD_CHANGED = {
    "probe_logistic/float64, measured, cluster/defaults": (
        857713504, 735935776, 808, "too_big", None, {"n_jobs": 1, "streamed": 1},
        "95129055f136662f"),
    "probe_logistic/float64, measured, cluster/table": (
        1365621258, 831920586, 913, "too_big", None, {"n_jobs": 1, "streamed": 1},
        "a6a82618efcafa6a"),
    "probe_logistic/six fits at once/defaults": (
        2638241984, 2638241984, 2894, "ok", None, {"n_jobs": 6, "streamed": 0},
        "677a156b9c722f46"),
    "probe_logistic/six fits at once/table": (
        5448651124, 5448651124, 5976, "ok", None, {"n_jobs": 6, "streamed": 0},
        "4a6e422e5d1ebe2d"),
    "probe_logistic/staging fold/defaults": (
        628068416, 628068416, 689, "ok", None, {"n_jobs": 2, "streamed": 0},
        "1d2903ee6f79582a"),
    "probe_logistic/staging fold/table": (
        898136298, 898136298, 986, "ok", None, {"n_jobs": 2, "streamed": 0},
        "a642a0b57ffd0204"),
}


# A family's own activation factor (models/architectures.py: Chronos): every embed job type's
# inputs gain `family_activation_factor` (None: the table's factor); every number stays. Case ->
# the digest now.
FAMILY_FACTOR_ADDED = {
    "embed_cpu/biot 8 h/defaults": "0ceed1121661a9ed",
    "embed_cpu/biot 8 h/table": "1091187930f3e89a",
    "embed_cpu/defaults filled/defaults": "3bedaa8133ae6b50",
    "embed_cpu/defaults filled/table": "0281954a13f688c8",
    "embed_cpu/no readers, measured, cluster/defaults": "87f9b2d58d385b28",
    "embed_cpu/no readers, measured, cluster/table": "749242fa4877dce1",
    "embed_gpu/below the smallest measured/defaults": "01429b251118559e",
    "embed_gpu/below the smallest measured/table": "4b5ff1d7c43baa90",
    "embed_gpu/reserved peaks, context/defaults": "c7ad12675bf72293",
    "embed_gpu/reserved peaks, context/table": "0db4859656e1d081",
    "embed_gpu/small gpu/defaults": "0c48479262ee39c9",
    "embed_gpu/small gpu/table": "4eac47ae26642807",
    "embed_gpu_device/allocated peaks/defaults": "d1593206eaad99c8",
    "embed_gpu_device/allocated peaks/table": "2e35dfe3957960b6",
    "embed_gpu_device/reserved peaks/defaults": "cd64e651ba52d11c",
    "embed_gpu_device/reserved peaks/table": "10b27da9dfed3ce5",
}
NEW_INPUT = "family_activation_factor"


# The staging probe's fit phase (issue 53): the per-row workspace the small calibration runs
# asked for was OpenBLAS's threaded buffers (a float32 copy of up to 40,000 rows, at most
# 40 MiB: blas_rows, blas_buffer_bytes) and the block read before the fits; the fold's read
# holds two store blocks, counted only beyond the fits' memory; workspace_factor's default
# is what one evaluation holds (1.5); a further parallel fit's heap (thread_heap_bytes, 0 by
# default). docs/measurements/2026-12-08-probe-workspace.md. Every probe_logistic outcome is
# new: case -> (total, fitted total, request MB, verdict, device, knobs, digest).
PROBE_WORKSPACE_CHANGED = {
    "probe_logistic/float64, measured, cluster/defaults": (
        884684640, 772963616, 848, "too_big", None, {"n_jobs": 1, "streamed": 1},
        "fed8880a84e28ef5"),
    "probe_logistic/float64, measured, cluster/table": (
        1421392394, 872880586, 958, "too_big", None, {"n_jobs": 1, "streamed": 1},
        "5ca93429639aa1e8"),
    "probe_logistic/six fits at once/defaults": (
        2678791360, 2678791360, 2938, "ok", None, {"n_jobs": 6, "streamed": 0},
        "89f1f72678cdb2a3"),
    "probe_logistic/six fits at once/table": (
        5633200500, 5633200500, 6179, "ok", None, {"n_jobs": 6, "streamed": 0},
        "6eec72c4e8e7d188"),
    "probe_logistic/staging fold/defaults": (
        641161728, 641161728, 704, "ok", None, {"n_jobs": 2, "streamed": 0},
        "ec1b799bcdcb86bb"),
    "probe_logistic/staging fold/table": (
        912947434, 912947434, 1002, "ok", None, {"n_jobs": 2, "streamed": 0},
        "0e5fed7750d45649"),
}


def expected(key: str) -> tuple:
    if key in PROBE_WORKSPACE_CHANGED:
        return PROBE_WORKSPACE_CHANGED[key]
    if key in PROBE_FOLD_CHANGED:
        return PROBE_FOLD_CHANGED[key]
    before = expected_before_family_factor(key)
    return (*before[:-1], FAMILY_FACTOR_ADDED[key]) if key in FAMILY_FACTOR_ADDED else before


def expected_before_family_factor(key: str) -> tuple:
    before = expected_before_streamed(key)
    return (*before[:-1], STATISTIC_STREAMED[key]) if key in STATISTIC_STREAMED else before


def without_new_input(value):
    """The outcome as it was before the input was added: the key dropped wherever it is."""
    if isinstance(value, dict):
        return {k: without_new_input(v) for k, v in value.items() if k != NEW_INPUT}
    if isinstance(value, list):
        return [without_new_input(v) for v in value]
    return value


def canonical_before(outcome) -> str:
    return json.dumps(without_new_input(json.loads(json.dumps(outcome))), sort_keys=True)


def expected_before_streamed(key: str) -> tuple:
    before = expected_before_keys(key)
    return (*before[:-1], MEMORY_KEYS_NAMED[key]) if key in MEMORY_KEYS_NAMED else before


def expected_before_keys(key: str) -> tuple:
    before = expected_before_finish(key)
    if key not in FINISH_CHANGED:
        return before
    total, fitted, _, verdict, device, _, _ = before
    request_mb, knobs, digest = FINISH_CHANGED[key]
    case = key.rsplit("/", 1)[0]
    return (total + finish_growth(case, case_batch(key)),
            fitted + finish_growth(case, knobs["batch_size"]) - fitted_shift(key),
            request_mb, verdict, device, knobs, digest)


def fitted_shift(key: str) -> int:
    """What the knob search took off beyond the block: the halved batch of the 8-hour BIOT
    job on the table (its estimate at batch 16 against the same job's at batch 32)."""
    return 81_881_252 if key == "embed_cpu/biot 8 h/table" else 0


def expected_before_finish(key: str) -> tuple:
    before = expected_before_readers(key)
    return (*before[:-1], READERS_CHANGED[key]) if key in READERS_CHANGED else before


def expected_before_readers(key: str) -> tuple:
    total, fitted, request_mb, *rest, digest = RECORDED[key]
    if key in CHANGED:
        request_mb, digest = CHANGED[key]
        total, fitted = total - CACHE_CHANGE, fitted - CACHE_CHANGE
    case, calibration = key.rsplit("/", 1)
    if case in EMBED_CHANGED:
        request_mb, digest, in_total, in_fitted = \
            EMBED_CHANGED[case][CALIBRATIONS.index(calibration)]
        total, fitted = total + in_total * PART_AHEAD, fitted + in_fitted * PART_AHEAD
    if case in GPU_PAGE_LOCKED:
        batch, fitted_batch, outcomes = GPU_PAGE_LOCKED[case]
        request_mb, digest = outcomes[CALIBRATIONS.index(calibration)]
        total, fitted = total + page_locked(batch), fitted + page_locked(fitted_batch)
    return (total, fitted, request_mb, *rest, digest)


@pytest.fixture(scope="module")
def today():
    return summary(all_outcomes(estimates))


@pytest.mark.parametrize("key", sorted(RECORDED))
def test_each_case_gives_the_recorded_numbers(today, key):
    assert today[key] == expected(key)


def test_the_memory_keys_named_changed_only_the_fix_texts():
    """The outcomes whose digest moved with the nested keys give the digest before once the
    two texts are put back: nothing else changed."""
    outcomes = all_outcomes(estimates)
    for key in set(MEMORY_KEYS_NAMED) - set(PROBE_FOLD_CHANGED):  # those: numbers new since
        text = canonical_before(outcomes[key])
        assert any(now in text for now in FIX_TEXTS_BEFORE), key
        for now, was in (FIX_TEXTS_BEFORE | TERM_NAME_BEFORE).items():
            text = text.replace(now, was)
        assert hashlib.sha256(text.encode()).hexdigest()[:16] == expected_before_keys(key)[-1]


def test_the_streamed_statistic_changed_only_the_terms_name():
    """The outcomes whose digest moved with the streamed statistic give the digest before
    once the term's old words are put back: nothing else changed."""
    outcomes = all_outcomes(estimates)
    for key in STATISTIC_STREAMED:
        text = canonical_before(outcomes[key])
        assert any(now in text for now in TERM_NAME_BEFORE), key
        for now, was in TERM_NAME_BEFORE.items():
            text = text.replace(now, was)
        assert hashlib.sha256(text.encode()).hexdigest()[:16] == \
            expected_before_streamed(key)[-1]


def test_the_change_covers_exactly_the_subject_mean_job_types():
    moved = {key for key in RECORDED if key.split("/")[0] in ("aggregate_subject_mean",
                                                              "probe_brain_age")}
    assert set(CHANGED) == moved


def test_the_part_made_ahead_covers_exactly_the_host_embed_job_types():
    moved = {key for key in RECORDED if key.split("/")[0] in ("embed_cpu", "embed_gpu")}
    assert {f"{case}/{calibration}" for case in EMBED_CHANGED
            for calibration in CALIBRATIONS} == moved


def test_the_probe_fold_change_covers_exactly_the_staging_probe():
    assert set(PROBE_FOLD_CHANGED) == {key for key in RECORDED
                                       if key.startswith("probe_logistic/")}


def test_the_probe_workspace_change_covers_exactly_the_staging_probe():
    assert set(PROBE_WORKSPACE_CHANGED) == set(PROBE_FOLD_CHANGED)
    # the knobs and verdicts the fold change gave stay; only the numbers moved
    for key, now in PROBE_WORKSPACE_CHANGED.items():
        assert now[3:6] == PROBE_FOLD_CHANGED[key][3:6], key


def test_every_job_type_before_the_refactor_is_covered():
    before = {"embed_cpu", "embed_gpu", "embed_gpu_device", "probe_logistic", "probe_ridge",
              "aggregate_subject_mean", "probe_brain_age"}
    assert {job for job, *_ in CASES} == before
    assert before <= set(estimates.JOB_TYPES)


def test_the_page_locked_copies_cover_exactly_the_gpu_host_job_type():
    assert set(GPU_PAGE_LOCKED) == {key.rsplit("/", 1)[0] for key in RECORDED
                                    if key.startswith("embed_gpu/")}


def test_the_readers_part_covers_exactly_the_embed_job_types():
    assert set(READERS_CHANGED) == {key for key in RECORDED if key.startswith("embed")}


def test_the_finish_block_covers_exactly_the_embed_job_types():
    assert set(FINISH_CHANGED) == {key for key in RECORDED if key.startswith("embed")}


def test_the_family_factor_added_only_its_input():
    """The embed outcomes whose digest moved with the new input give the digest before once
    it is dropped (it is None in every case: the table's factor, as before)."""
    outcomes = all_outcomes(estimates)
    for key in FAMILY_FACTOR_ADDED:
        assert NEW_INPUT in json.dumps(outcomes[key]), key
        text = canonical_before(outcomes[key])
        assert hashlib.sha256(text.encode()).hexdigest()[:16] == \
            expected_before_family_factor(key)[-1]
