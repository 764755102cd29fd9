"""Plots braid-run loss logs (step,loss CSV) as one SVG, no dependencies.

    plot_losses.py OUT.svg NAME=loss.csv [NAME=loss.csv ...] [--smooth N]

Each curve: the per-step losses (thin) and their trailing mean over N steps
(thick, default 25).
"""
import csv
import sys

COLORS = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e"]


def main():
    args = sys.argv[1:]
    smooth = 25
    if "--smooth" in args:
        i = args.index("--smooth")
        smooth = int(args[i + 1])
        del args[i:i + 2]
    out, specs = args[0], args[1:]
    curves = []
    for spec in specs:
        name, path = spec.split("=", 1)
        with open(path) as f:
            rows = [(int(r["step"]), float(r["loss"])) for r in csv.DictReader(f)]
        curves.append((name, rows))
    steps = max(s for _, rows in curves for s, _ in rows)
    top = max(l for _, rows in curves for _, l in rows)
    bottom = min(l for _, rows in curves for _, l in rows)
    top, bottom = (int(top) + 1), max(0, int(bottom) - 1)
    W, H, L, R, T, B = 720, 400, 60, 20, 30, 50
    x = lambda s: L + (W - L - R) * s / steps
    y = lambda v: T + (H - T - B) * (top - v) / (top - bottom)
    svg = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" '
           f'font-family="sans-serif" font-size="12">',
           f'<rect width="{W}" height="{H}" fill="white"/>']
    for v in range(bottom, top + 1):
        svg.append(f'<line x1="{L}" x2="{W - R}" y1="{y(v):.1f}" y2="{y(v):.1f}" stroke="#ddd"/>')
        svg.append(f'<text x="{L - 8}" y="{y(v) + 4:.1f}" text-anchor="end">{v}</text>')
    tick = 10 ** (len(str(steps)) - 1)
    for s in range(0, steps + 1, tick):
        svg.append(f'<text x="{x(s):.1f}" y="{H - B + 18}" text-anchor="middle">{s}</text>')
    svg.append(f'<text x="{(L + W - R) / 2}" y="{H - 12}" text-anchor="middle">step</text>')
    svg.append(f'<text x="16" y="{(T + H - B) / 2}" transform="rotate(-90 16 {(T + H - B) / 2})" text-anchor="middle">loss (next-token cross entropy)</text>')
    for i, (name, rows) in enumerate(curves):
        color = COLORS[i % len(COLORS)]
        raw = " ".join(f"{x(s):.1f},{y(l):.1f}" for s, l in rows)
        svg.append(f'<polyline fill="none" stroke="{color}" stroke-opacity="0.25" stroke-width="1" points="{raw}"/>')
        avg = []
        for k in range(len(rows)):
            window = rows[max(0, k - smooth + 1): k + 1]
            avg.append((rows[k][0], sum(l for _, l in window) / len(window)))
        pts = " ".join(f"{x(s):.1f},{y(l):.1f}" for s, l in avg)
        svg.append(f'<polyline fill="none" stroke="{color}" stroke-width="2.2" points="{pts}"/>')
        svg.append(f'<rect x="{W - R - 190}" y="{T + 8 + 18 * i}" width="14" height="3" fill="{color}"/>')
        svg.append(f'<text x="{W - R - 170}" y="{T + 13 + 18 * i}">{name} (mean of {smooth})</text>')
    svg.append("</svg>")
    with open(out, "w") as f:
        f.write("\n".join(svg) + "\n")


if __name__ == "__main__":
    main()
