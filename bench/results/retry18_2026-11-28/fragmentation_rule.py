"""The fragmentation verdict against every single-GPU real run (retry18, lead). Reads
`fidelity.py --format json` rows and prints, for the runs near the capacity and every run that
went out of memory, plan's total, need (with the fp32 logits block where it binds), reserved +
context and capacity, and whether three rules agree with what happened: A need <= capacity (plan's
verdict), B total <= capacity (no block), C reserved + context <= capacity.
Usage: python3 bench/realruns/fidelity.py --format json FILES > rows.json
       python3 bench/results/retry18_2026-11-28/fragmentation_rule.py rows.json
"""
import json,sys
rows=json.load(open(sys.argv[1]))
rows=rows['rows'] if isinstance(rows,dict) else rows
G=2**30
print("%-34s %5s %4s %7s %7s %7s %7s %7s %7s %6s %6s %6s"%("run","oom","cur","total","need","resv+fw","cap","mres","mpeak","A","B","C"))
stats={'A':0,'B':0,'C':0,'n':0}
for r in rows:
    if r.get('status')!='ok': continue
    cap=r['pred_capacity_bytes']; tot=r['pred_mem_bytes']; need=r['pred_need_bytes']; res=(r['pred_reserved_bytes'] or 0)+(r['pred_framework_bytes'] or 0)
    oom=bool(r.get('oom'))
    A = need<=cap; B= tot<=cap; C= res<=cap
    stats['n']+=1
    for k,v in (('A',A),('B',B),('C',C)):
        if v==(not oom): stats[k]+=1
    if (cap-tot)/cap<0.12 or oom:
        print("%-34s %5s %4s %7.1f %7.1f %7.1f %7.1f %7s %7s %6s %6s %6s"%(r['run'][:34],oom,r['pred_feasible'],tot/G,need/G,res/G,cap/G, '%.1f'%(r['meas_mem_reserved_bytes']/G) if r.get('meas_mem_reserved_bytes') else '-','%.1f'%(r['meas_mem_bytes']/G) if r.get('meas_mem_bytes') else '-', A==(not oom),B==(not oom),C==(not oom)))
print(stats)
