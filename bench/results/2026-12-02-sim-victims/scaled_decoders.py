#!/usr/bin/env python3
"""scaled_decoders.py LAYERS DIVISOR > TRACE: the 7B decoder of
bench/workloads/gen_traces.py cut to LAYERS layers, every persistent
chunk's bytes and every step's time divided by DIVISOR (an lms trace on
stdout)."""
import sys
L=int(sys.argv[1]); div=int(sys.argv[2])
d,ff,b,ctx=4096,11008,8,2048
sz=lambda n: max(1,n//div)
out=["lms-trace 1","workload dec%d-%d"%(L,div)]
cid=0
def chunk(n,name,pers=False):
    global cid
    out.append("chunk %d %d %s %s"%(cid,n,name,"persistent" if pers else "transient")); cid+=1; return cid-1
steps=[]
x=chunk(b*d*2,"token"); steps.append("step 1000 embed w:%d"%x)
for i in range(L):
    a=chunk(sz(4*d*d*2),"l%d.attn.w"%i,True); m=chunk(sz(3*d*ff*2),"l%d.mlp.w"%i,True); kv=chunk(sz(2*b*ctx*d*2),"l%d.kv"%i,True)
    ao=chunk(b*d*2,"l%d.ao"%i); y=chunk(b*d*2,"l%d.y"%i)
    steps.append("step %d l%d.attn r:%d r:%d rw:%d w:%d"%(26843//div,i,x,a,kv,ao))
    steps.append("step %d l%d.mlp r:%d r:%d w:%d"%(43285//div,i,ao,m,y)); x=y
h=chunk(sz(32000*d*2),"head",True); lg=chunk(b*32000*4,"logits")
steps.append("step %d head r:%d r:%d w:%d"%(40000//div,x,h,lg)); steps.append("step 1000 sample r:%d"%lg)
print("\n".join(out+steps))
