#!/usr/bin/env python3
"""Timeline (ms from the change) of one address change of a `sip-recovery ... changes=N capture` run.

usage: sip-change-timeline.py LAB_DIR BENCH_STDERR INDEX [SPAN_SECONDS]
Merges netlink.txt, netres-client.log (JSON lines), wire.txt and the Kamailio NRTEST lines."""
import sys, re, json, datetime
lab, err, idx = sys.argv[1], sys.argv[2], int(sys.argv[3])
span = float(sys.argv[4]) if len(sys.argv) > 4 else 0.7
ch = [float(m.group(1)) for m in re.finditer(r'address-change: at=([0-9.]+)', open(err).read())]
t0 = ch[idx]
out = []
iso = lambda s: datetime.datetime.fromisoformat(s.replace('Z', '+00:00')).timestamp()
for l in open(f'{lab}/netlink.txt'):
    m = re.match(r'\[(\S+)\]\s*(.*)', l)
    if m:
        t = datetime.datetime.fromisoformat(m.group(1)).replace(tzinfo=datetime.timezone.utc).timestamp()
        if 'inet ' in m.group(2) or m.group(2).startswith('default') or 'Deleted default' in m.group(2) or ('Deleted' in m.group(2) and 'inet ' in m.group(2)):
            out.append((t, 'netlink', m.group(2)[:90]))
for l in open(f'{lab}/netres-client.log'):
    if l.startswith('{'):
        j = json.loads(l)
        d = j['kind'] + ' ' + j['event'] + (' %s %s attempt=%s %s' % (j.get('action'), j.get('outcome'), j.get('attempt'), j.get('error') or '') if j['kind'] == 'action' else '') + (' ' + ','.join(j.get('actions') or []) if j['kind'] == 'decision' else '') + (' to=%s' % j.get('to') if j['kind'] == 'transition' else '')
        out.append((iso(j['ts']), 'netres', d))
cur = None
pk = []
for l in open(f'{lab}/wire.txt'):
    w = l.split(' ', 2)
    if len(w) == 3 and w[1] == 'IP':
        try: cur = [float(w[0]), l.strip(), '']; pk.append(cur)
        except ValueError: cur = None
    elif cur is not None: cur[2] += l
for t, head, body in pk:
    if 'netres' not in body: continue
    first = next((x for x in body.splitlines() if 'SIP/2.0' in x or 'REGISTER' in x or 'PUBLISH' in x), '')
    cseq = re.search(r'CSeq: (\d+ \w+)', body)
    out.append((t, 'wire', '%s | %s | %s' % (head.split(' ', 2)[2][:60], first.strip()[-40:], cseq.group(1) if cseq else '')))
for l in open(f'{lab}/kamailio.log'):
    m = re.search(r'NRTEST (\w+) user=netres (\S+) .*at=([0-9.]+)', l)
    if m: out.append((float(m.group(3)), 'kamailio', m.group(1) + ' ' + m.group(2)))
for t, src, d in sorted(out):
    if t0 - 0.005 <= t <= t0 + span:
        print('%9.3f %-8s %s' % ((t - t0) * 1000, src, d))
