#!/usr/bin/env python3
"""compare.py BEFORE.json AFTER.json: two sweeps (bench/workloads/sweep.py
--json), row by row: the schedule policy's median and worst over the lower
bound, its runs over 1.25x and unsettled, every run that moved by more
than 0.1 %, and the runs bringing in more than LRU."""
import json,sys,statistics
a=json.load(open(sys.argv[1]));b=json.load(open(sys.argv[2]))
key=lambda r:(r['workload'],r['over'],r['link'])
A={key(r):r for r in a['rows']}; B={key(r):r for r in b['rows']}
moved=[];rb=[];ra=[];over=[];fnu=[]
for k in B:
  if k not in A: continue
  sa=A[k]['schedule'];sb=B[k]['schedule']
  xa=sa['iteration_ns']/sa['lower_bound_ns']; xb=sb['iteration_ns']/sb['lower_bound_ns']
  ra.append(xa); rb.append(xb)
  if abs(sb['iteration_ns']-sa['iteration_ns'])>0.001*sa['iteration_ns']: moved.append((sb['iteration_ns']/sa['iteration_ns']-1,k,xa,xb,sa['ahead'],sb['ahead']))
  if xb>1.25: over.append((xb,k))
  if sb['bytes_h2d']>B[k]['lru']['bytes_h2d']: fnu.append((k,sb['bytes_h2d']/B[k]['lru']['bytes_h2d']-1))
print('runs',len(rb),'median %.3f->%.3f worst %.3f->%.3f'%(statistics.median(ra),statistics.median(rb),max(ra),max(rb)))
print('over1.25',len(over),'unsettled',sum(1 for k in B if not B[k]['schedule']['settled']))
moved.sort()
for m in moved: print('%+.1f%% %s %.3f->%.3f %s->%s'%(m[0]*100,m[1],m[2],m[3],m[4],m[5]))
print('fnu>lru',len(fnu)); [print(' ',f[0],'%.2f%%'%(f[1]*100)) for f in fnu]
