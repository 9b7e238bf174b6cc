"""Draws images/icon.png (128x128): a lens over a small graph. Pure Python (zlib + struct), so
it needs no imaging library: `python3 images/make_icon.py`."""

import math
import struct
import zlib
from pathlib import Path

SIZE, SS = 128, 4  # output size, supersampling factor (anti-aliasing)
BG = (30, 34, 48)
RING = (238, 76, 44)  # PyTorch orange
GRAPH = (236, 239, 244)
EDGE = (140, 150, 170)


def inside_rounded_square(x, y, size, radius):
    cx = min(max(x, radius), size - radius)
    cy = min(max(y, radius), size - radius)
    return (x - cx) ** 2 + (y - cy) ** 2 <= radius**2


def dist_to_segment(px, py, ax, ay, bx, by):
    dx, dy = bx - ax, by - ay
    t = max(0.0, min(1.0, ((px - ax) * dx + (py - ay) * dy) / (dx * dx + dy * dy)))
    return math.hypot(px - ax - t * dx, py - ay - t * dy)


NODES = [(50, 40), (36, 66), (64, 66), (50, 90)]
EDGES = [(0, 1), (0, 2), (1, 3), (2, 3)]
LENS_C, LENS_R, LENS_W = (54, 62), 34, 9


def colour(x, y):
    """Colour (r, g, b, a) of the point (x, y) in output pixel units."""
    if not inside_rounded_square(x, y, SIZE, 24):
        return (0, 0, 0, 0)
    c = BG
    for a, b in EDGES:
        if dist_to_segment(x, y, *NODES[a], *NODES[b]) <= 2.2:
            c = EDGE
    for nx, ny in NODES:
        if math.hypot(x - nx, y - ny) <= 7:
            c = GRAPH
    d = math.hypot(x - LENS_C[0], y - LENS_C[1])
    if abs(d - LENS_R) <= LENS_W / 2:
        c = RING
    # the handle, from the ring outwards at 45 degrees
    hx = LENS_C[0] + (LENS_R + LENS_W / 2) * math.cos(math.pi / 4)
    hy = LENS_C[1] + (LENS_R + LENS_W / 2) * math.sin(math.pi / 4)
    if dist_to_segment(x, y, hx - 4, hy - 4, hx + 30, hy + 30) <= 7:
        c = RING
    return (*c, 255)


def render():
    rows = []
    for py in range(SIZE):
        row = bytearray([0])  # filter: none
        for px in range(SIZE):
            acc = [0, 0, 0, 0]
            for sy in range(SS):
                for sx in range(SS):
                    r, g, b, a = colour(px + (sx + 0.5) / SS, py + (sy + 0.5) / SS)
                    acc[0] += r * a
                    acc[1] += g * a
                    acc[2] += b * a
                    acc[3] += a
            alpha = acc[3]
            row += bytes([acc[0] // alpha, acc[1] // alpha, acc[2] // alpha] if alpha else [0, 0, 0])
            row.append(alpha // (SS * SS))
        rows.append(bytes(row))
    return b"".join(rows)


def png(width, height, rgba):
    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    header = struct.pack(">IIBBBBB", width, height, 8, 6, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(rgba, 9)) + chunk(b"IEND", b"")


if __name__ == "__main__":
    out = Path(__file__).with_name("icon.png")
    out.write_bytes(png(SIZE, SIZE, render()))
    print(out)
