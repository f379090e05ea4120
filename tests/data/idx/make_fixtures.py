#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-3.0-or-later
# Regenerates fashion-mini/: a Fashion-MNIST-shaped folder (28x28, 10 classes)
# of 6 train and 4 test images, so the loader is tested where the Debian
# dataset is not installed. Pixel (i, y, x) = (37*i + 7*y + 3*x) % 256,
# label i = (3*i + 1) % 10; gzip with mtime 0 so reruns give identical bytes.
import gzip
import os
import struct

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fashion-mini")


def write(name, data):
    with open(os.path.join(HERE, name), "wb") as f:
        f.write(gzip.compress(data, compresslevel=9, mtime=0))


def images(count):
    header = struct.pack(">IIII", 0x803, count, 28, 28)
    pixels = bytes((37 * i + 7 * y + 3 * x) % 256
                   for i in range(count) for y in range(28) for x in range(28))
    return header + pixels


def labels(count):
    return struct.pack(">II", 0x801, count) + bytes((3 * i + 1) % 10 for i in range(count))


os.makedirs(HERE, exist_ok=True)
write("train-images-idx3-ubyte.gz", images(6))
write("train-labels-idx1-ubyte.gz", labels(6))
write("t10k-images-idx3-ubyte.gz", images(4))
write("t10k-labels-idx1-ubyte.gz", labels(4))
