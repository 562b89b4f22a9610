#!/usr/bin/env python3
"""report_screenshots.py: `plan report` as a reader sees it (issue 23).

Writes the default guide (`plan report -o OUT/guide.html`, timed), then with headless Chromium:
the top of the page at 1280 x 1600 (the issue's window) and at 1200 x 900 (the first screen of a
laptop), each chart alone in a page with the guide's style sheet at 1000 x 700, and the page's
height at 1280 wide (a script added to a copy of the page reads document.scrollHeight and the
top of each section; the guide itself has no script). Prints one tab-separated row per
screenshot (file, width, height, bytes) read from the PNG header, then the page height and the
section offsets, so bench/results/report_<date>/README.md can be checked by rerunning this.

usage: bench/report_screenshots.py [--plan build/cli/plan] [--chromium chromium] OUTDIR
"""
import argparse
import os
import re
import struct
import subprocess
import sys
import time

FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
         "--force-device-scale-factor=1", "--disable-background-networking",
         "--disable-component-update", "--no-first-run"]


def chromium(args, exe, profile, **kw):
    return subprocess.run(["timeout", "120", exe] + FLAGS + ["--user-data-dir=" + profile] + args,
                          stderr=subprocess.DEVNULL, **kw)


def shoot(exe, profile, page, png, w, h):
    chromium(["--window-size=%d,%d" % (w, h), "--screenshot=" + png, "file://" + page], exe,
             profile, stdout=subprocess.DEVNULL)
    with open(png, "rb") as f:
        head = f.read(24)
    if head[:8] != b"\x89PNG\r\n\x1a\n":
        sys.exit("chromium wrote no PNG for %s" % page)
    pw, ph = struct.unpack(">II", head[16:24])
    print("%s\t%d\t%d\t%d" % (os.path.basename(png), pw, ph, os.path.getsize(png)))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--plan", default="build/cli/plan")
    ap.add_argument("--chromium", default="chromium")
    ap.add_argument("outdir")
    a = ap.parse_args()
    out = os.path.abspath(a.outdir)
    os.makedirs(out, exist_ok=True)
    profile = os.path.join(out, ".profile")
    guide = os.path.join(out, "guide.html")
    t0 = time.monotonic()
    r = subprocess.run([a.plan, "report", "-o", guide], capture_output=True, text=True)
    wall = time.monotonic() - t0
    if r.returncode:
        sys.exit(r.stderr)
    print("# %s (wall %.1f s)" % (r.stdout.strip(), wall))
    print("# file\twidth\theight\tbytes")
    html = open(guide, encoding="utf-8").read()
    shoot(a.chromium, profile, guide, os.path.join(out, "top.png"), 1280, 1600)
    shoot(a.chromium, profile, guide, os.path.join(out, "top-1200x900.png"), 1200, 900)
    head = html[:html.index("<body>") + len("<body>")]
    for m in re.finditer(r'<figure id="chart-([^"]+)".*?</figure>', html, re.S):
        page = os.path.join(out, "chart-%s.html" % m.group(1))
        with open(page, "w", encoding="utf-8") as f:
            f.write(head + "<main>" + m.group(0) + "</main></body></html>\n")
        shoot(a.chromium, profile, page, os.path.join(out, "chart-%s.png" % m.group(1)), 1000,
              700)
        os.remove(page)
    probe = os.path.join(out, "height.html")
    script = ('<script>var o=[];document.querySelectorAll("h2").forEach(function(h){'
              'o.push(h.id+":"+Math.round(h.getBoundingClientRect().top+window.scrollY))});'
              'o.push("end:"+document.documentElement.scrollHeight);'
              'document.body.setAttribute("data-h",o.join(" "))</script></body>')
    with open(probe, "w", encoding="utf-8") as f:
        f.write(html.replace("</body>", script))
    dom = chromium(["--window-size=1280,1600", "--dump-dom", "file://" + probe], a.chromium,
                   profile, stdout=subprocess.PIPE, text=True).stdout
    os.remove(probe)
    m = re.search(r'data-h="([^"]*)"', dom)
    print("# page at 1280 wide, section tops and height (px): %s" % (m.group(1) if m else "?"))
    print("# guide.html %d bytes" % os.path.getsize(guide))


if __name__ == "__main__":
    main()
