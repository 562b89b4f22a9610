#!/usr/bin/env python3
"""rows_json_summary.py ROWS.json... — PP rows side by side and pooled stats from mgpu_fidelity.py
--format json outputs (concatenated arrays, as pprows_sim.sh writes them)."""
import json, sys, statistics as st
def load(f):
    txt=open(f).read(); dec=json.JSONDecoder(); i=0; rows=[]
    while i < len(txt):
        while i < len(txt) and txt[i].isspace(): i+=1
        if i>=len(txt): break
        o,i=dec.raw_decode(txt,i); rows+=o
    return {(r['dir'],r['run']):r for r in rows if r.get('status')=='ok'}
fs=sys.argv[1:]
R=[load(f) for f in fs]
keys=[k for k in R[0] if R[0][k]['par']=='pp']
def summ(sel,name):
    for j,r in enumerate(R):
        e=[100*r[k]['step_err'] for k in sel if k in r]
        if e: print("%-10s %-30s n=%2d med|e| %5.2f mean|e| %5.2f signed med %+5.2f"%(name,fs[j][-22:],len(e),st.median(map(abs,e)),st.mean(map(abs,e)),st.median(e)))
for k in sorted(keys, key=lambda k:(R[0][k]['gpu'],k)):
    print("%-5s %-36s %s"%(R[0][k]['gpu'],k[1][:36]," ".join("%+6.1f"%(100*r[k]['step_err']) if k in r else "   -  " for r in R)))
summ(keys,"PP all")
for g in ("h200","h100"): summ([k for k in keys if R[0][k]['gpu']==g],"PP "+g)
nk=[k for k in R[0] if R[0][k]['par']!='pp']
summ(nk,"nonPP")
summ(list(R[0]),"all")
