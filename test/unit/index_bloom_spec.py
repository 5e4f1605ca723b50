"""A split-block Bloom filter written from parquet-format's BloomFilter.md, hashed with the
xxHash C library's Python binding: what our filters' bytes must be.

stdin: {"filters": [{"bytes": N, "keys": ["hex", ...]}], "hashes": ["hex", ...]}
stdout: {"filters": ["hex of the filter", ...], "hashes": ["xxh64 as decimal", ...]}
"""
import json
import struct
import sys

import xxhash

SALT = [0x47B6137B, 0x44974D91, 0x8824AD5B, 0xA2B7289D, 0x705495C7, 0x2DF1424B, 0x9EFC4947, 0x5C6BFB31]


def mask(x):
    # "multiply x by each salt, keep the low 32 bits, shift right by 27: the bit to set in word i"
    return [1 << (((x * s) & 0xFFFFFFFF) >> 27) for s in SALT]


def insert(words, blocks, h):
    # "the block index is ((h >> 32) * z) >> 32, the key the low 32 bits"
    block = ((h >> 32) * blocks) >> 32
    for i, bit in enumerate(mask(h & 0xFFFFFFFF)):
        words[block * 8 + i] |= bit


def main():
    request = json.load(sys.stdin)
    out = {"filters": [], "hashes": []}
    for f in request["filters"]:
        blocks = f["bytes"] // 32
        words = [0] * (blocks * 8)
        for key in f["keys"]:
            insert(words, blocks, xxhash.xxh64_intdigest(bytes.fromhex(key), seed=0))
        out["filters"].append(struct.pack("<%dI" % len(words), *words).hex())
    out["hashes"] = [str(xxhash.xxh64_intdigest(bytes.fromhex(k), seed=0)) for k in request["hashes"]]
    json.dump(out, sys.stdout)


main()
