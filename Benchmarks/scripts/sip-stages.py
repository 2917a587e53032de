#!/usr/bin/env python3
"""Per-flap stage breakdown of a `netres-bench sip-recovery ... capture` run.

usage: sip-stages.py LAB_DIR BENCH_STDERR [-v]
LAB_DIR is /tmp/nr-sip-lab-<pid> (printed at the end); BENCH_STDERR holds the `flap: up=` lines.
Sources: netres-client.log (JSON lines), netlink.txt (ip -ts monitor), wire.txt (tcpdump on nrr0),
kamailio.log (NRTEST lines). Times in ms from the bench reading the clock before the link-up command."""
import sys, json, re, datetime, statistics
lab, err = sys.argv[1], sys.argv[2]
def iso(ts):
    return datetime.datetime.fromisoformat(ts.replace('Z', '+00:00')).timestamp()
ups = [float(m.group(1)) for m in re.finditer(r'flap: up=([0-9.]+)', open(err).read())]
ev = []
for line in open(f'{lab}/netres-client.log'):
    if not line.startswith('{'): continue
    try: j = json.loads(line)
    except Exception: continue
    ev.append(j)
def first_after(items, t, pred, limit=1.0):
    c = [x for x in items if x[0] > t and x[0] < t + limit and pred(x)]
    return min(c, key=lambda x: x[0])[0] if c else None
js = [(iso(j['ts']), j) for j in ev]
trans = [(t, j) for t, j in js if j['kind'] == 'transition' and j['event'] == 'restored']
dec = [(t, j) for t, j in js if j['kind'] == 'decision' and j['event'] == 'network.restored']
start = [(t, j) for t, j in js if j['kind'] == 'action' and j['event'] == 'network.restored' and j['outcome'] == 'started']
done = [(t, j) for t, j in js if j['kind'] == 'action' and j['event'] == 'network.restored' and j['outcome'] == 'succeeded']
kam = []
for line in open(f'{lab}/kamailio.log'):
    m = re.search(r'NRTEST (\w+) user=netres .* at=([0-9.]+)', line)
    if m: kam.append((float(m.group(2)), m.group(1)))
nl = []
try:
    for line in open(f'{lab}/netlink.txt'):
        m = re.match(r'\[(\S+)\]\s*(.*)', line)
        if m: nl.append((datetime.datetime.fromisoformat(m.group(1)).replace(tzinfo=datetime.timezone.utc).timestamp(), m.group(2)))
except FileNotFoundError: pass
wire = []
try:
    cur = None
    for line in open(f'{lab}/wire.txt'):
        w = line.split(' ', 2)
        if len(w) == 3 and w[1] == 'IP':
            if cur: wire.append(cur)
            try: cur = [float(w[0]), line]
            except ValueError: cur = None
        elif cur: cur[1] += line
    if cur: wire.append(cur)
except FileNotFoundError: pass
wreg = [(t, b) for t, b in wire if 'REGISTER sip:' in b and 'netres' in b and '> 198.18.0.1.5060' in b]
w200 = [(t, b) for t, b in wire if 'SIP/2.0 200' in b and 'CSeq' in b and 'REGISTER' in b and 'netres' in b]
cols = ['nl_link', 'nl_route', 'transition', 'decision', 'action_start', 'wire_REGISTER', 'kam_REGISTER', 'kam_200', 'wire_200', 'action_done']
rows = []
for up in ups:
    r = {}
    r['nl_link'] = first_after(nl, up, lambda x: 'nrc0' in x[1] and ',UP' in x[1] and 'LOWER_UP' in x[1])
    r['nl_route'] = first_after(nl, up, lambda x: x[1].startswith('default'))
    r['transition'] = first_after(trans, up, lambda x: True)
    r['decision'] = first_after(dec, up, lambda x: True)
    r['action_start'] = first_after(start, up, lambda x: True)
    r['wire_REGISTER'] = first_after(wreg, up, lambda x: True)
    r['kam_REGISTER'] = first_after(kam, up, lambda x: x[1] == 'REGISTER')
    r['kam_200'] = first_after(kam, up, lambda x: x[1] == 'REGISTERED')
    r['wire_200'] = first_after(w200, up, lambda x: True)
    r['action_done'] = first_after(done, up, lambda x: True)
    rows.append({k: (None if v is None else (v - up) * 1000) for k, v in r.items()})
print(f'{len(rows)} flaps; ms from the bench reading the clock before spawning `sh -c "ip link set up && ip route replace"`')
print('%-14s %5s %8s %8s %8s %8s' % ('stage', 'n', 'p10', 'p50', 'p90', 'max'))
for c in cols:
    v = sorted(x[c] for x in rows if x[c] is not None)
    if not v: continue
    q = lambda p: v[min(len(v) - 1, int(p * len(v)))]
    print('%-14s %5d %8.2f %8.2f %8.2f %8.2f' % (c, len(v), q(.1), q(.5), q(.9), v[-1]))
print('\nper-stage deltas (ms), p50 over flaps where both exist:')
prev = None
for c in cols:
    if prev:
        d = sorted(x[c] - x[prev] for x in rows if x[c] is not None and x[prev] is not None)
        if d: print('  %-14s -> %-14s n=%3d p50 %8.3f  p90 %8.3f  max %8.3f' % (prev, c, len(d), d[len(d)//2], d[min(len(d)-1,int(.9*len(d)))], d[-1]))
    if any(x[c] is not None for x in rows): prev = c
print('\nspans (ms):')
for a, b, label in [(None, 'nl_route', 'bench: link-up command until the default route is back (netlink)'),
                    ('nl_route', 'wire_REGISTER', 'netres: route message until its REGISTER is on the wire'),
                    ('wire_REGISTER', 'kam_200', 'registrar: REGISTER on the wire until its 200 OK is sent'),
                    ('nl_route', 'kam_200', 'route message until the 200 OK')]:
    d = sorted((x[b] - (x[a] if a else 0)) for x in rows if x[b] is not None and (a is None or x[a] is not None))
    if d: print('  %-64s n=%3d p10 %7.3f p50 %7.3f p90 %7.3f max %7.3f' % (label, len(d), d[len(d)//10], d[len(d)//2], d[min(len(d)-1,int(.9*len(d)))], d[-1]))
if '-v' in sys.argv:
    for i, x in enumerate(rows):
        print(i, ' '.join('%s=%s' % (k, '-' if v is None else '%.2f' % v) for k, v in x.items()))
