//! The hit path of a translation, read from the assembly of one function (PTX, or AMDGPU assembly
//! as `llc` writes it): how many instructions a lane executes from entry to return when its key is
//! found, and how many global loads on that path wait for one another.
//!
//! The path is given by the global loads a hit makes, in order (a load in a search loop once per
//! round): the shortest path from entry to the first, then from each to the next, and from the
//! last to a return, each part through no other of those loads. Our lookup's hit is one index probe; a binary
//! search's is `log2(entries)` rounds of its key load, then its value load. A load is dependent on another when its
//! address comes from it through registers, or when it follows a conditional branch whose
//! condition does: a GPU does not speculate, so nothing after such a branch issues before the
//! load that decides it has returned.

use std::collections::{HashMap, VecDeque};

use anyhow::{bail, Context, Result};

/// The assembly dialect.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Isa {
    /// PTX from `llc` (NVIDIA).
    Ptx,
    /// AMDGPU assembly from `llc`.
    Amdgcn,
}

/// One instruction, with what the path analysis needs of it.
#[derive(Debug, Clone)]
pub struct Insn {
    /// The opcode (PTX with its type suffixes, AMDGPU's mnemonic).
    pub opcode: String,
    /// The label a branch goes to.
    target: Option<String>,
    /// Whether control may also fall through (a predicated or conditional branch).
    conditional: bool,
    /// Whether this returns from the function.
    returns: bool,
    /// A load from global (or generic, or constant-space global) memory.
    pub global_load: bool,
    defs: Vec<String>,
    uses: Vec<String>,
}

/// A function's instructions in order, and where its labels point.
#[derive(Debug)]
pub struct Function {
    insns: Vec<Insn>,
    labels: HashMap<String, usize>,
}

/// What [`hit_path`] measures.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HitPath {
    /// Instructions executed on the path.
    pub instructions: usize,
    /// The longest chain of global loads on it, each waiting for the one before.
    pub dependent_loads: u32,
}

impl Function {
    /// Reads `function` out of `asm`.
    pub fn parse(isa: Isa, asm: &str, function: &str) -> Result<Function> {
        let body = match isa {
            Isa::Ptx => ptx_body(asm, function),
            Isa::Amdgcn => amdgcn_body(asm, function),
        }
        .with_context(|| format!("no function {function} in the assembly"))?;
        let mut insns = Vec::new();
        let mut labels = HashMap::new();
        for line in body {
            let line = line.split("//").next().unwrap_or("");
            let line = if isa == Isa::Amdgcn { line.split(';').next().unwrap_or("") } else { line };
            let line = line.trim();
            if line.is_empty()
                || (line.starts_with('.') && !line.ends_with(':'))
                || line == "{"
                || line == "}"
            {
                continue;
            }
            if let Some(label) = line.strip_suffix(':') {
                labels.insert(label.to_string(), insns.len());
                continue;
            }
            match isa {
                // `{ .reg .b32 tmp; mov.b64 {tmp, %r1}, %rd1; }`: a scope of its own around
                // instructions.
                Isa::Ptx if line.starts_with('{') && line.ends_with('}') => insns.extend(
                    line[1..line.len() - 1]
                        .split(';')
                        .map(str::trim)
                        .filter(|i| !i.is_empty() && !i.starts_with('.'))
                        .map(ptx_insn),
                ),
                Isa::Ptx => insns.push(ptx_insn(line.trim_end_matches(';'))),
                Isa::Amdgcn => insns.push(amdgcn_insn(line)),
            }
        }
        if let Some(missing) =
            insns.iter().filter_map(|i| i.target.as_ref()).find(|t| !labels.contains_key(*t))
        {
            bail!("{function}: a branch to {missing}, which is not a label of the function");
        }
        Ok(Function { insns, labels })
    }

    /// Indices of the instructions control may go to after `at`.
    fn successors(&self, at: usize) -> Vec<usize> {
        let insn = &self.insns[at];
        let mut next = Vec::new();
        if let Some(target) = &insn.target {
            next.push(self.labels[target]);
        }
        if !insn.returns && (insn.target.is_none() || insn.conditional) && at + 1 < self.insns.len() {
            next.push(at + 1);
        }
        next
    }

    /// The shortest path (instruction indices) from `from` to the first instruction `to` accepts,
    /// both included, through none of `avoid` on the way.
    fn shortest(&self, from: usize, to: impl Fn(usize) -> bool, avoid: &[usize]) -> Option<Vec<usize>> {
        let mut before = vec![None; self.insns.len()];
        let mut seen = vec![false; self.insns.len()];
        let mut queue = VecDeque::from([from]);
        seen[from] = true;
        while let Some(at) = queue.pop_front() {
            if to(at) {
                let mut path = vec![at];
                while let Some(prev) = before[*path.last()?] {
                    path.push(prev);
                }
                path.reverse();
                return Some(path);
            }
            if at != from && avoid.contains(&at) {
                continue;
            }
            for next in self.successors(at) {
                if !seen[next] {
                    seen[next] = true;
                    before[next] = Some(at);
                    queue.push_back(next);
                }
            }
        }
        None
    }

    /// Indices of the global loads, in order.
    pub fn global_loads(&self) -> Vec<usize> {
        (0..self.insns.len()).filter(|&i| self.insns[i].global_load).collect()
    }

    /// The instruction at `at`.
    pub fn insn(&self, at: usize) -> &Insn {
        &self.insns[at]
    }

    /// Whether control can come back to `at` from after it.
    pub fn in_loop(&self, at: usize) -> bool {
        self.successors(at).into_iter().any(|s| self.shortest(s, |i| i == at, &[]).is_some())
    }

    /// Whether control can go from `from` to `to`.
    pub fn reaches(&self, from: usize, to: usize) -> bool {
        self.successors(from).into_iter().any(|s| self.shortest(s, |i| i == to, &[]).is_some())
    }

    /// The path a hit takes, given the loads that tell it (`loads`, in the order it makes them;
    /// a load in a loop named once per round): the shortest path from entry to the first, then
    /// from each to the next and from the last to a return, each part through no named load but
    /// its end (a round of a search passes its key load, not its value load).
    pub fn hit_path(&self, loads: &[usize]) -> Result<HitPath> {
        let (&first, _) = loads.split_first().context("no load named")?;
        let mut path = self.shortest(0, |i| i == first, loads).context("the first load is unreachable")?;
        let segment = |from: usize, to: &dyn Fn(usize) -> bool| {
            self.successors(from).into_iter().filter_map(|s| self.shortest(s, to, loads)).min_by_key(Vec::len)
        };
        for pair in loads.windows(2) {
            let next = pair[1];
            path.extend(
                segment(pair[0], &|i| i == next).context("a named load does not follow the one before")?,
            );
        }
        let last = *loads.last().context("no load named")?;
        path.extend(segment(last, &|i| self.insns[i].returns).context("no return after the last load")?);
        Ok(HitPath { instructions: path.len(), dependent_loads: self.dependent_loads(&path) })
    }

    /// The longest chain of global loads along `path`, through registers and through the
    /// conditions of the branches passed.
    fn dependent_loads(&self, path: &[usize]) -> u32 {
        let mut depth: HashMap<&str, u32> = HashMap::new();
        let (mut control, mut longest) = (0, 0);
        for &at in path {
            let insn = &self.insns[at];
            let mut d =
                insn.uses.iter().map(|u| depth.get(u.as_str()).copied().unwrap_or(0)).max().unwrap_or(0);
            d = d.max(control);
            if insn.global_load {
                d += 1;
                longest = longest.max(d);
            }
            if insn.conditional {
                control = control.max(d);
            }
            for def in &insn.defs {
                depth.insert(def, d);
            }
        }
        longest
    }
}

/// The lines between the braces of the PTX function `name` (its definition: a prototype before
/// it ends in `;` instead).
fn ptx_body<'a>(ptx: &'a str, name: &str) -> Option<Vec<&'a str>> {
    let lines: Vec<&str> = ptx.lines().collect();
    let headers = lines.iter().enumerate().filter(|(_, l)| {
        let l = l.trim_start();
        !l.starts_with("//") && l.contains(".func") && l.contains(&format!(" {name}("))
    });
    for (header, _) in headers {
        let end = header + lines[header..].iter().position(|l| matches!(l.trim(), "{" | ";"))?;
        if lines[end].trim() == "{" {
            let close = end + lines[end..].iter().position(|l| l.trim() == "}")?;
            return Some(lines[end + 1..close].to_vec());
        }
    }
    None
}

/// The lines from the AMDGPU label `name:` to its `.Lfunc_end`.
fn amdgcn_body<'a>(asm: &'a str, name: &str) -> Option<Vec<&'a str>> {
    let lines: Vec<&str> = asm.lines().collect();
    let start = lines.iter().position(|l| l.split(';').next().unwrap_or("").trim() == format!("{name}:"))?;
    let end = start + lines[start..].iter().position(|l| l.trim_start().starts_with(".Lfunc_end"))?;
    Some(lines[start + 1..end].to_vec())
}

/// `(opcode, operands)` of an instruction written `opcode a, {b, c}, [d]`: commas inside braces
/// or brackets do not split.
fn split(text: &str) -> (String, Vec<String>) {
    let (opcode, rest) = text.split_once(char::is_whitespace).unwrap_or((text, ""));
    let mut operands = Vec::new();
    let (mut depth, mut current) = (0, String::new());
    for c in rest.chars() {
        match c {
            '{' | '[' | '(' => depth += 1,
            '}' | ']' | ')' => depth -= 1,
            ',' if depth == 0 => {
                operands.push(std::mem::take(&mut current));
                continue;
            }
            _ => {}
        }
        current.push(c);
    }
    operands.push(current);
    let operands = operands.into_iter().map(|o| o.trim().to_string()).filter(|o| !o.is_empty()).collect();
    (opcode.to_string(), operands)
}

/// The PTX registers (`%r1`, `%rd2`, `%p3`) an operand names.
fn ptx_registers(operand: &str) -> Vec<String> {
    operand
        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '%' || c == '_'))
        .filter(|t| t.starts_with('%') && t.len() > 1)
        .map(str::to_string)
        .collect()
}

fn ptx_insn(text: &str) -> Insn {
    let (guard, text) = match text.strip_prefix('@') {
        Some(rest) => {
            let (guard, rest) = rest.split_once(char::is_whitespace).unwrap_or((rest, ""));
            (Some(guard.trim_start_matches('!').to_string()), rest.trim())
        }
        None => (None, text),
    };
    let (opcode, operands) = split(text);
    let base = opcode.split('.').next().unwrap_or("");
    let branch = base == "bra";
    let writes = !(branch || base == "ret" || base == "st" || base == "call");
    let mut defs = Vec::new();
    let mut uses: Vec<String> = guard.iter().cloned().collect();
    for (n, operand) in operands.iter().enumerate() {
        let registers = ptx_registers(operand);
        // `setp` may write two predicates (`%p1|%p2`); an address `[%rd1+8]` is read.
        if n == 0 && writes && !operand.starts_with('[') {
            defs.extend(registers);
        } else {
            uses.extend(registers);
        }
    }
    let global_load = base == "ld"
        && !["param", "local", "shared"].iter().any(|space| opcode.contains(&format!(".{space}")));
    Insn {
        target: branch.then(|| operands.first().cloned()).flatten(),
        conditional: branch && guard.is_some(),
        returns: base == "ret",
        global_load,
        opcode,
        defs,
        uses,
    }
}

/// The AMDGPU registers an operand names (`s4`, `v[0:3]` as v0..v3, `vcc`, `exec`).
fn amdgcn_registers(operand: &str) -> Vec<String> {
    let operand = operand.trim_start_matches('-').trim_start_matches('!');
    for special in ["vcc", "exec", "scc"] {
        if operand == special || operand.starts_with(&format!("{special}_")) {
            return vec![special.to_string()];
        }
    }
    let mut chars = operand.chars();
    let Some(kind @ ('s' | 'v')) = chars.next() else { return Vec::new() };
    let rest = chars.as_str();
    if let Some(range) = rest.strip_prefix('[').and_then(|r| r.strip_suffix(']')) {
        if let Some((lo, hi)) = range.split_once(':') {
            if let (Ok(lo), Ok(hi)) = (lo.parse::<u32>(), hi.parse::<u32>()) {
                return (lo..=hi).map(|r| format!("{kind}{r}")).collect();
            }
        }
    } else if !rest.is_empty() && rest.chars().all(|c| c.is_ascii_digit()) {
        return vec![format!("{kind}{rest}")];
    }
    Vec::new()
}

fn amdgcn_insn(text: &str) -> Insn {
    let (opcode, operands) = split(text);
    let branch = opcode == "s_branch" || opcode.starts_with("s_cbranch_");
    let compare = opcode.starts_with("s_cmp") || opcode.starts_with("s_bitcmp");
    let store = opcode.contains("_store_");
    let writes = !(branch
        || compare
        || store
        || opcode.starts_with("s_waitcnt")
        || opcode == "s_setpc_b64"
        || opcode == "s_nop");
    let mut defs = Vec::new();
    let mut uses = Vec::new();
    for (n, operand) in operands.iter().enumerate() {
        let registers = amdgcn_registers(operand.split_whitespace().next().unwrap_or(""));
        if n == 0 && writes {
            defs.extend(registers);
        } else {
            uses.extend(registers);
        }
    }
    if compare {
        defs.push("scc".into());
    }
    if opcode.contains("saveexec") {
        defs.push("exec".into());
    }
    if let Some(condition) = opcode.strip_prefix("s_cbranch_") {
        uses.push(
            if condition.starts_with("scc") {
                "scc"
            } else if condition.starts_with("vcc") {
                "vcc"
            } else {
                "exec"
            }
            .into(),
        );
    }
    let global_load =
        opcode.contains("_load_") && !opcode.starts_with("scratch_") && !opcode.starts_with("ds_");
    Insn {
        target: branch.then(|| operands.first().cloned()).flatten(),
        conditional: opcode.starts_with("s_cbranch_"),
        returns: opcode == "s_setpc_b64" || opcode == "s_endpgm",
        global_load,
        opcode,
        defs,
        uses,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A binary search's shape: a loop whose load decides, through a branch, the next address.
    const SEARCH_PTX: &str = "
.visible .func  (.param .b64 func_retval0) find(
	.param .b64 find_param_0
)
{
	.reg .pred 	%p<3>;
	.reg .b64 	%rd<9>;
	ld.param.u64 	%rd1, [find_param_0];
	ld.global.u64 	%rd2, [table];
$L__BB0_1:
	ld.u64 	%rd3, [%rd2];
	setp.eq.s64 	%p1, %rd3, %rd1;
	@%p1 bra 	$L__BB0_3;
	add.s64 	%rd2, %rd2, 16;
	bra.uni 	$L__BB0_1;
$L__BB0_3:
	ld.u64 	%rd4, [%rd2+8];
	st.param.b64 	[func_retval0], %rd4;
	ret;
}
";

    #[test]
    fn a_loop_taken_n_times_chains_its_loads() {
        let f = Function::parse(Isa::Ptx, SEARCH_PTX, "find").unwrap();
        let [table, key, value] = f.global_loads()[..] else { panic!("{:?}", f.global_loads()) };
        assert!(f.in_loop(key) && !f.in_loop(table) && !f.in_loop(value));
        assert!(f.reaches(key, value) && !f.reaches(value, key));
        // ld.param, ld.global, then per round: ld, setp, @bra, add, bra; the last round's ld,
        // setp, @bra; then ld, st, ret.
        let once = f.hit_path(&[key, value]).unwrap();
        assert_eq!(once, HitPath { instructions: 2 + 3 + 3, dependent_loads: 3 });
        let rounds: Vec<usize> = [key; 12].into_iter().chain([value]).collect();
        let twelve = f.hit_path(&rounds).unwrap();
        assert_eq!(twelve, HitPath { instructions: 2 + 11 * 5 + 3 + 3, dependent_loads: 14 });
        // A round of the loop passes no other load: from the value load there is no way back.
        assert!(f.hit_path(&[value, key]).is_err());
    }

    const PROBE_AMDGCN: &str = "
probe:                                  ; @probe
; %bb.0:
	s_load_dwordx2 s[4:5], s[4:5], 0x0
	v_mov_b32_e32 v2, s4
	s_waitcnt lgkmcnt(0)
	v_cmp_ne_u64_e32 vcc, s[4:5], v[0:1]
	s_and_saveexec_b64 s[6:7], vcc
	s_cbranch_execz .LBB0_2
; %bb.1:
	global_load_dwordx4 v[2:5], v[2:3], off
	s_waitcnt vmcnt(0)
	v_mov_b32_e32 v0, v4 ; the value
.LBB0_2:
	s_or_b64 exec, exec, s[6:7]
	s_setpc_b64 s[30:31]
.Lfunc_end0:
";

    #[test]
    fn amdgpu_probe_path_and_registers() {
        assert_eq!(amdgcn_registers("v[2:5]"), ["v2", "v3", "v4", "v5"]);
        assert_eq!(amdgcn_registers("s7"), ["s7"]);
        assert_eq!(amdgcn_registers("vcc_lo"), ["vcc"]);
        assert!(amdgcn_registers("0x10").is_empty());
        let f = Function::parse(Isa::Amdgcn, PROBE_AMDGCN, "probe").unwrap();
        let [header, probe] = f.global_loads()[..] else { panic!("{:?}", f.global_loads()) };
        assert_eq!(f.insn(probe).opcode, "global_load_dwordx4");
        assert!(!f.in_loop(probe));
        // Six before the probe (the header's load first), the probe, then three and the return.
        assert_eq!(f.hit_path(&[probe]).unwrap(), HitPath { instructions: 11, dependent_loads: 2 });
        assert_eq!(f.hit_path(&[header, probe]).unwrap(), HitPath { instructions: 11, dependent_loads: 2 });
        assert!(f.hit_path(&[probe, probe]).is_err(), "not in a loop");
    }

    #[test]
    fn vector_operands_and_inline_scopes_are_read() {
        let text = "
.visible .func  (.param .b64 func_retval0) f(
)
{
	ld.global.u64 	%rd1, [g];
	{ .reg .b32 tmp; mov.b64 {tmp, %r1}, %rd1; }
	mul.wide.u32 	%rd2, %r1, 16;
	ld.v2.u64 	{%rd3, %rd4}, [%rd2];
	st.param.b64 	[func_retval0+0], %rd4;
	ret;
}
";
        let f = Function::parse(Isa::Ptx, text, "f").unwrap();
        let [_, probe] = f.global_loads()[..] else { panic!() };
        assert_eq!(f.insn(probe).defs, ["%rd3", "%rd4"]);
        assert_eq!(f.hit_path(&[probe]).unwrap(), HitPath { instructions: 6, dependent_loads: 2 });
    }

    #[test]
    fn a_branch_to_nowhere_is_refused() {
        let broken = SEARCH_PTX.replace("@%p1 bra 	$L__BB0_3", "@%p1 bra 	$L__BB9_9");
        assert!(Function::parse(Isa::Ptx, &broken, "find").is_err());
        assert!(Function::parse(Isa::Ptx, SEARCH_PTX, "other").is_err());
    }
}
