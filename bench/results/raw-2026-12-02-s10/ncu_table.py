import csv,collections,re,sys,io
lines=open(sys.argv[1]).read().splitlines()
start=[i for i,l in enumerate(lines) if l.startswith('"ID"')][0]
rows=list(csv.DictReader(io.StringIO("\n".join(lines[start:]))))
k={}
for r in rows:
    i=int(r['ID']); d=k.setdefault(i,{'name':r['Kernel Name'],'grid':r['Grid Size'],'block':r['Block Size']})
    d[r['Metric Name']]=float(r['Metric Value'].replace(',',''))
ids=sorted(k)
names=[k[i]['name'] for i in ids]
emb=[j for j,n in enumerate(names) if 'embed' in n]
print('kernels',len(ids),'embed at',emb[:5])
a,b=(emb[0],emb[1]) if len(emb)>1 else (0,len(ids))
agg={}
tot=0;totb=0
for j in range(a,b):
    d=k[ids[j]]
    n=re.sub(r'\(.*','',d['name'])[:70]
    key=(n, d['grid'])
    e=agg.setdefault(key,[0,0,0]); e[0]+=1; e[1]+=d['gpu__time_duration.sum']; e[2]+=d['dram__bytes_read.sum']
    tot+=d['gpu__time_duration.sum']; totb+=d['dram__bytes_read.sum']
print('kernels in token',b-a,'sum of durations us',round(tot/1e3,1),'DRAM read GB',round(totb/1e9,3))
for key,(c,t,by) in sorted(agg.items(), key=lambda x:-x[1][1]):
    print(f"{c:4d} {t/1e3:8.1f}us {t/c/1e3:7.2f}us/call {by/max(t,1):6.0f}GB/s  {key[0]} {key[1]}")
