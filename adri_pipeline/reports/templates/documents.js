const docs=[...document.querySelectorAll('article.doc')];let shown=[],pageNo=0,current=-1;const SIZE={{ page_size }};
const q=id=>document.getElementById(id);
function matches(d){const v=q('f-var').value,val=q('f-val').value,st=q('f-status').value,s=q('f-search').value.toLowerCase();
 if(s&&!(d.dataset.id.toLowerCase().includes(s)||d.dataset.title.toLowerCase().includes(s)))return false;
 if(!v&&!val&&!st)return true;
 return [...d.querySelectorAll('tr.answer')].some(r=>(!v||r.dataset.var===v)&&(!val||r.dataset.value.split('|').includes(val))&&(!st||r.dataset.status===st));}
function render(){shown=docs.filter(matches);const pages=Math.max(1,Math.ceil(shown.length/SIZE));pageNo=Math.min(pageNo,pages-1);
 const visible=new Set(shown.slice(pageNo*SIZE,(pageNo+1)*SIZE));docs.forEach(d=>d.hidden=!visible.has(d));
 q('count').textContent=shown.length+' of '+docs.length+' documents, page '+(pageNo+1)+' of '+pages;current=-1;
 docs.forEach(d=>d.classList.remove('current'));}
function go(step){const vis=shown.slice(pageNo*SIZE,(pageNo+1)*SIZE);if(!vis.length)return;
 if(current+step>=vis.length&&(pageNo+1)*SIZE<shown.length){pageNo++;render();current=-1;go(1);return;}
 if(current+step<0&&pageNo>0){pageNo--;render();current=SIZE;go(-1);return;}
 current=Math.max(0,Math.min(vis.length-1,current+step));docs.forEach(d=>d.classList.remove('current'));
 vis[current].classList.add('current');vis[current].scrollIntoView({block:'start'});q('current').textContent=vis[current].dataset.id;}
['f-var','f-val','f-status'].forEach(id=>q(id).addEventListener('change',()=>{pageNo=0;render();}));
q('f-search').addEventListener('input',()=>{pageNo=0;render();});
q('prev-page').onclick=()=>{pageNo=Math.max(0,pageNo-1);render();};q('next-page').onclick=()=>{pageNo++;render();};
document.addEventListener('keydown',e=>{if(e.target.tagName==='INPUT')return;
 if(e.key==='j'||e.key==='ArrowDown'&&e.altKey||e.key==='n'){go(1);e.preventDefault();}
 if(e.key==='k'||e.key==='ArrowUp'&&e.altKey||e.key==='p'){go(-1);e.preventDefault();}});
render();
