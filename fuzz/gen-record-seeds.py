#!/usr/bin/env python3
"""Write well-formed perf records, one per file, as seeds for fuzz_record.

Layouts are those the sampler asks the kernel for (lib/collect/sampler_perf.c):
sample_type IDENTIFIER | IP | TID | TIME and sample_id_all, so every
side-band record ends in the trailer {pid u32, tid u32, time u64, id u64}.
Strings are NUL-terminated and padded to 8 bytes, as the kernel pads them.

    fuzz/gen-record-seeds.py [DIR]     (default fuzz/corpus/fuzz_record)
"""
import os
import struct
import sys

SAMPLE, MMAP2, COMM, FORK, EXIT, LOST, LOST_SAMPLES, THROTTLE = 9, 10, 3, 7, 4, 2, 13, 5
MISC_KERNEL, MISC_USER = 1, 2
MISC_COMM_EXEC = 1 << 13
MISC_MMAP_BUILD_ID = 1 << 14
PROT_READ, PROT_EXEC, MAP_PRIVATE = 1, 4, 2

PID, TID, ID, T0 = 4242, 4243, 0x51, 1_000_000_000_123


def padded(s):
    b = s.encode() + b"\0"
    return b + b"\0" * (-len(b) % 8)


def trailer(pid=PID, tid=TID, time=T0):
    return struct.pack("<IIQQ", pid, tid, time, ID)


def record(rtype, misc, body):
    size = 8 + len(body)
    assert size % 8 == 0 and size < 65536
    return struct.pack("<IHH", rtype, misc, size) + body


def sample(ip, misc=MISC_USER):
    return record(SAMPLE, misc, struct.pack("<QQIIQ", ID, ip, PID, TID, T0 + 17))


def mmap2(path, build_id=None):
    head = struct.pack("<IIQQQ", PID, TID, 0x555555554000, 0x2000, 0x1000)
    if build_id is None:
        ident, misc = struct.pack("<IIQQ", 8, 1, 1311234, 0), MISC_USER
    else:
        ident = struct.pack("<BBH", len(build_id), 0, 0) + build_id.ljust(20, b"\0")
        misc = MISC_USER | MISC_MMAP_BUILD_ID
    tail = struct.pack("<II", PROT_READ | PROT_EXEC, MAP_PRIVATE) + padded(path)
    return record(MMAP2, misc, head + ident + tail + trailer(time=T0 + 5))


def seeds():
    bid = bytes(range(0xa0, 0xb4))  # 20 bytes, a SHA-1 build-id
    return {
        "sample-user": sample(0x555555555139),
        "sample-kernel": sample(0xffffffff81e00f30, MISC_KERNEL),
        "mmap2-inode": mmap2("/usr/bin/spin"),
        "mmap2-buildid": mmap2("/usr/lib/x86_64-linux-gnu/libc.so.6", bid),
        "mmap2-buildid-md5": mmap2("/opt/app/libshort.so", bid[:16]),
        "comm-exec": record(COMM, MISC_COMM_EXEC,
                            struct.pack("<II", PID, PID) + padded("spin") + trailer()),
        "comm-rename": record(COMM, 0, struct.pack("<II", PID, TID) +
                              padded("worker-thread-1") + trailer()),
        "fork": record(FORK, 0, struct.pack("<IIIIQ", PID, 1, PID, 1, T0 - 9) +
                       trailer(time=T0 - 9)),
        "exit": record(EXIT, 0, struct.pack("<IIIIQ", PID, 1, PID, 1, T0 + 99) +
                       trailer(time=T0 + 99)),
        "lost": record(LOST, 0, struct.pack("<QQ", ID, 12345) + trailer(0, 0)),
        "lost-samples": record(LOST_SAMPLES, 0, struct.pack("<Q", 77) + trailer()),
        "throttle": record(THROTTLE, 0, struct.pack("<QQQ", T0, ID, ID) + trailer()),
    }


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "corpus", "fuzz_record")
    os.makedirs(out, exist_ok=True)
    for name, data in seeds().items():
        with open(os.path.join(out, name), "wb") as f:
            f.write(data)


if __name__ == "__main__":
    main()
