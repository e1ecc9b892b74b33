#!/usr/bin/env python3
"""report_render.py LMS [SCREENSHOT.png] - `lms report`'s report.html as a
person opens it: rendered by headless Chromium, every chart it shows
loads as an image of its file's size, the headline and the verdict are
there, a list item per link with no Markdown marks showing as text, and a
screenshot of the page comes out as a PNG of the window's size.

Exit 77 (skipped, with the reason) where Chromium or gnuplot is missing:
scripts/bootstrap.sh installs both with apt-get where it can, and
LMS_CHROMIUM names a browser elsewhere.  SCREENSHOT.png, if given, gets
the screenshot (how docs/report.png is made).
"""
import json
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile

SKIP = 77
WIDTH, HEIGHT = 1200, 1900


def chromium():
    for name in (os.environ.get("LMS_CHROMIUM"), "chromium", "chromium-browser",
                 "google-chrome", "google-chrome-stable"):
        if name and shutil.which(name):
            return shutil.which(name)
    return None


def browse(browser, args, timeout=120):
    # No sandbox: the tests may run as root, where Chromium refuses one.
    cmd = [browser, "--headless=new", "--no-sandbox", "--disable-gpu",
           "--no-first-run", "--hide-scrollbars"] + args
    return subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          text=True, timeout=timeout)


# Loaded beside report.html (so from the same directory), the page checks
# what the browser made of the report: each image's decoded size, the
# headline and the verdict, and writes it where --dump-dom shows it.
HARNESS = """<!doctype html><html><body>
<iframe id="r" src="report.html" style="width:1200px;height:900px"></iframe>
<pre id="out">pending</pre>
<script>
function look() {
  var d = document.getElementById('r').contentDocument;
  var imgs = Array.prototype.map.call(d.images, function (i) {
    return {src: i.getAttribute('src'), w: i.naturalWidth, h: i.naturalHeight,
            complete: i.complete};
  });
  var h2 = Array.prototype.map.call(d.querySelectorAll('h2'),
                                    function (h) { return h.textContent; });
  var verdict = '';
  var v = Array.prototype.filter.call(d.querySelectorAll('h2'),
      function (h) { return h.textContent == 'Verdict'; })[0];
  if (v && v.nextElementSibling) verdict = v.nextElementSibling.textContent;
  var h1 = d.querySelector('h1');
  document.getElementById('out').textContent = JSON.stringify(
      {h1: h1 ? h1.textContent : null, h2: h2, verdict: verdict, imgs: imgs,
       raw: d.body.innerText.indexOf('**') >= 0 ||
            /^- /m.test(d.body.innerText),
       items: d.querySelectorAll('li strong').length});
}
document.getElementById('r').onload = function () { setTimeout(look, 200); };
</script></body></html>
"""


def png_size(path):
    with open(path, "rb") as f:
        head = f.read(24)
    if head[:8] != b"\x89PNG\r\n\x1a\n":
        return None
    return struct.unpack(">II", head[16:24])


def main():
    lms = os.path.abspath(sys.argv[1])
    shot_to = sys.argv[2] if len(sys.argv) > 2 else None
    browser = chromium()
    if browser is None:
        print("SKIP: no Chromium to render report.html (install chromium, as "
              "scripts/bootstrap.sh does with apt-get, or set LMS_CHROMIUM)")
        return SKIP
    if shutil.which("gnuplot") is None:
        print("SKIP: no gnuplot, so the report has no charts to render "
              "(install gnuplot-nox)")
        return SKIP
    fail = []
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "rep")
        p = subprocess.run([lms, "report", "--compare-links", "googlenet",
                            "--out", out], stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, text=True, timeout=600)
        if p.returncode != 0:
            print(p.stdout)
            print("FAIL: lms report exited", p.returncode)
            return 1
        html = open(os.path.join(out, "report.html")).read()
        shown = re.findall(r'<img src="([^"]+)"', html)
        if len(shown) < 4:
            fail.append(f"report.html shows {len(shown)} images, expected the "
                        "timeline, links, busy and limits charts")
        with open(os.path.join(out, "check.html"), "w") as f:
            f.write(HARNESS)
        r = browse(browser, ["--allow-file-access-from-files",
                             "--virtual-time-budget=20000", "--dump-dom",
                             "file://" + os.path.join(out, "check.html")])
        m = re.search(r'<pre id="out">(.*?)</pre>', r.stdout, re.S)
        if r.returncode != 0 or m is None or m.group(1) == "pending":
            print(r.stderr[-2000:])
            print("FAIL: Chromium did not render the report (exit",
                  r.returncode, ")")
            return 1
        seen = json.loads(m.group(1).replace("&quot;", '"')
                          .replace("&lt;", "<").replace("&gt;", ">")
                          .replace("&amp;", "&"))
        if "googlenet" not in (seen["h1"] or ""):
            fail.append(f"headline {seen['h1']!r} does not name the workload")
        if "Verdict" not in seen["h2"] or len(seen["verdict"].strip()) < 20:
            fail.append(f"no verdict under its heading: {seen['verdict']!r}")
        if seen["raw"]:
            fail.append("Markdown marks (** or a leading '- ') show as text")
        if seen["items"] < 2:
            fail.append(f"{seen['items']} verdict items, one per link expected")
        got = {i["src"]: i for i in seen["imgs"]}
        for src in shown:
            i = got.get(src)
            if i is None:
                fail.append(f"{src}: not in the rendered page")
                continue
            want = png_size(os.path.join(out, src))
            if not i["complete"] or i["w"] == 0 or want is None or \
                    (i["w"], i["h"]) != want:
                fail.append(f"{src}: rendered {i['w']}x{i['h']}, file {want}")
        shot = os.path.join(tmp, "report.png")
        r = browse(browser, [f"--window-size={WIDTH},{HEIGHT}",
                             "--virtual-time-budget=20000",
                             f"--screenshot={shot}",
                             "file://" + os.path.join(out, "report.html")])
        size = png_size(shot) if os.path.exists(shot) else None
        if size != (WIDTH, HEIGHT):
            fail.append(f"screenshot: {size}, expected {(WIDTH, HEIGHT)}")
        elif shot_to:
            shutil.copyfile(shot, shot_to)
        imgs = ", ".join("%s %dx%d" % (i["src"], i["w"], i["h"])
                         for i in seen["imgs"])
        print(f"rendered: {seen['h1']!r}, {len(seen['imgs'])} images "
              f"({imgs}), verdict {seen['verdict'].strip()[:80]!r}")
    for f in fail:
        print("FAIL:", f)
    return 1 if fail else 0


if __name__ == "__main__":
    sys.exit(main())
