#!/usr/bin/env python3
"""The persistent decode kernel's producer cursor (kernels/pdecode.cu: cursor_op, cursor_next, chunk_end),
transcribed, against the order the consumers take pages in (the kernel's op loop, its chunk loop and
run_projection_split's unit and page loops), for random op lists, grids and row counts: the two must
agree page for page, or a block waits for a page that never comes. Run: python3 cursor_sim.py"""
import random
ROWBYTES=3072
def page_cols(fp8): return ROWBYTES//(1 if fp8 else 2)
def chunk_end(rows, k, lo):
    c = 0 if rows <= 4 else 3072
    return min(k, lo + c) if c else k
def first_unit(b, off, G): return (b - off + G) % G
def producer(b, ops, G, rows):
    out=[]; step=0; off=0
    # cursor_op
    def cop(state):
        step, off = state['step'], state['off']
        while step < len(ops):
            n,k,fp8 = ops[step]
            if n is None: step+=1; continue
            units=n//8; u=first_unit(b,off,G)
            state.update(step=step, off=off, u=u, units=units, c0=0, lo=0, hi=chunk_end(rows,k,0), k=k, fp8=fp8)
            if u < units: return
            off=(off+units)%G; step+=1
        state.update(done=True)
    st={'step':0,'off':0,'done':False}; cop(st)
    while not st['done']:
        out.append((st['step'], st['u'], st['c0']))
        # cursor_next
        st['c0'] += page_cols(st['fp8'])
        if st['c0'] < st['hi']: continue
        st['c0'] = st['lo']; st['u'] += G
        if st['u'] < st['units']: continue
        if st['hi'] < st['k']:
            st['lo']=st['hi']; st['c0']=st['lo']; st['hi']=chunk_end(rows, st['k'], st['lo']); st['u']=first_unit(b, st['off'], G); continue
        st['off']=(st['off']+st['units'])%G; st['step']+=1; cop(st)
    return out
def consumer(b, ops, G, rows):
    out=[]; off=0
    for step,(n,k,fp8) in enumerate(ops):
        if n is None: continue
        lo=0
        while lo < k:
            hi=chunk_end(rows,k,lo)
            u=first_unit(b,off,G)
            while u < n//8:
                c0=lo
                while c0 < hi:
                    out.append((step,u,c0)); c0+=page_cols(fp8)
                u+=G
            lo=hi
        off=(off+n//8)%G
    return out
random.seed(1)
for trial in range(3000):
    G=random.choice([1,2,3,7,16,132])
    rows=random.choice([1,2,4,5,8])
    ops=[]
    for _ in range(random.randint(1,8)):
        if random.random()<0.15: ops.append((None,0,0)); continue
        fp8=random.random()<0.5
        k=random.choice([16,192,320,1536,3072,3344,4096,8192,6144+16])
        n=8*random.randint(1,60)
        ops.append((n,k,fp8))
    for b in range(G):
        p=producer(b,ops,G,rows); c=consumer(b,ops,G,rows)
        assert p==c, (trial,G,rows,ops,b,p[:10],c[:10])
print("ok")
