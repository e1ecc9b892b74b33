#!/usr/bin/env python3
"""resident_at_start.py LOG BASE LAST: the chunks on the device at the start
of each iteration BASE+1..LAST of a 7B decoder's replay, from a log of
`lms -log debug,swap,graph sim ...` run by a build with
range-eviction-experiments.patch and LMS_TMP_EV=1 (which logs each
eviction).  Chunks are named by size (a: attention weight, kv: key-value
cache, m: MLP weight, H: head) and numbered in the order iteration BASE
brought them in (BASE must bring in every chunk, as the first iteration
after the trial does)."""
import re,sys
from collections import Counter
lines=open(sys.argv[1]).read().split('\n')
seq=[]; 
for l in lines:
    m=re.search(r'graph \d+\] iteration (\d+):',l)
    if m: seq.append(('it',int(m.group(1)))); continue
    m=re.search(r'swap-in (\d+) bytes from (0x\w+)',l)
    if m: seq.append(('+',m.group(2),int(m.group(1)))); continue
    m=re.search(r'evict (0x\w+) (\d+) step',l)
    if m: seq.append(('-',m.group(1),int(m.group(2))))
# naming from iteration base (all swapped in)
base=int(sys.argv[2]); names={}; cnt=Counter()
kind={134217728:'a',268435456:'kv',270532608:'m',262144000:'H'}
cur=None
for e in seq:
    if e[0]=='it': cur=e[1]+1; continue
    if cur==base and e[0]=='+' and e[1] not in names:
        names[e[1]]='%s%d'%(kind.get(e[2],'x'),cnt[e[2]]); cnt[e[2]]+=1
res=set(); cur=None
for e in seq:
    if e[0]=='it':
        cur=e[1]+1
        if cur>base and cur<=int(sys.argv[3]):
            r=sorted((names.get(h,'?') for h in res), key=lambda x:(x[0],int(re.sub(r'\D','',x) or 0)))
            print('start of',cur,'resident %.2f GB:'%(sum(n for h,n in sz.items() if h in res)/1e9),' '.join(r))
        continue
    if cur is None or cur<base: 
        if e[0]=='+': pass
    if e[0]=='+': res.add(e[1])
    else: res.discard(e[1])
    sz=globals().setdefault('sz',{}); sz[e[1]]=e[2]
