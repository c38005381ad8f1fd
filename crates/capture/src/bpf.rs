//! A classic BPF (cBPF) interpreter for the programs libpcap compiles.
//!
//! Programs are validated once (every jump lands inside the program, only
//! forward jumps, the last instruction is a return, scratch memory indices
//! are in range, no division by a constant zero); then [`Program::run`] never
//! panics: a load outside the packet ends the program with 0 (reject), as in
//! the kernel, and division by a zero X register returns 0.
//!
//! libpcap's own interpreter accepts backward unconditional jumps (its
//! `protochain` code loops over IPv6 extension headers), so we do too; a
//! step budget ([`MAX_STEPS`]) ends any loop with a reject.

/// One cBPF instruction (`struct bpf_insn`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Insn {
    /// Opcode: class | size/op | mode/source.
    pub code: u16,
    /// Jump offset when the condition is true.
    pub jt: u8,
    /// Jump offset when the condition is false.
    pub jf: u8,
    /// Generic operand.
    pub k: u32,
}

/// Why a cBPF program was refused.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ValidateError {
    /// The program has no instructions.
    #[error("empty BPF program")]
    Empty,
    /// An opcode this interpreter does not know.
    #[error("unknown BPF opcode {code:#06x} at instruction {at}")]
    UnknownOpcode {
        /// The opcode.
        code: u16,
        /// Instruction index.
        at: usize,
    },
    /// A jump lands outside the program.
    #[error("BPF jump out of range at instruction {at}")]
    JumpOutOfRange {
        /// Instruction index.
        at: usize,
    },
    /// Scratch memory index >= 16.
    #[error("BPF scratch memory index {k} out of range at instruction {at}")]
    BadMemIndex {
        /// The index.
        k: u32,
        /// Instruction index.
        at: usize,
    },
    /// Division or modulo by the constant 0.
    #[error("BPF division by constant zero at instruction {at}")]
    DivByZero {
        /// Instruction index.
        at: usize,
    },
    /// The last instruction can fall through.
    #[error("BPF program does not end with a return")]
    NoFinalReturn,
}

const LD: u16 = 0x00;
const LDX: u16 = 0x01;
const ST: u16 = 0x02;
const STX: u16 = 0x03;
const ALU: u16 = 0x04;
const JMP: u16 = 0x05;
const RET: u16 = 0x06;
const MISC: u16 = 0x07;

const W: u16 = 0x00;
const H: u16 = 0x08;
const B: u16 = 0x10;

const IMM: u16 = 0x00;
const ABS: u16 = 0x20;
const IND: u16 = 0x40;
const MEM: u16 = 0x60;
const LEN: u16 = 0x80;
const MSH: u16 = 0xa0;

const SRC_X: u16 = 0x08;

/// Instructions executed per packet before the program is stopped (reject).
pub const MAX_STEPS: u32 = 1 << 16;

/// A validated cBPF program.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Program {
    /// The instructions, validated by [`Program::new`].
    insns: Vec<Insn>,
}

fn known(code: u16) -> bool {
    match code & 0x07 {
        LD => {
            matches!(code & 0x18, W | H | B) && matches!(code & 0xe0, IMM | ABS | IND | MEM | LEN)
        }
        LDX => matches!(code & 0xe0, IMM | MEM | LEN) || code == LDX | B | MSH,
        ST | STX => code & 0xf8 == 0,
        ALU => code & 0xf0 <= 0xa0,
        JMP => code & 0xf0 <= 0x40,
        RET => matches!(code & 0x18, 0x00 | 0x08 | 0x10),
        _ => matches!(code & 0xf8, 0x00 | 0x80),
    }
}

impl Program {
    /// Validates `insns`.
    pub fn new(insns: Vec<Insn>) -> Result<Program, ValidateError> {
        if insns.is_empty() {
            return Err(ValidateError::Empty);
        }
        let n = insns.len();
        for (at, i) in insns.iter().enumerate() {
            if !known(i.code) {
                return Err(ValidateError::UnknownOpcode { code: i.code, at });
            }
            let class = i.code & 0x07;
            let mem = (class == LD || class == LDX) && i.code & 0xe0 == MEM;
            if (mem || class == ST || class == STX) && i.k >= 16 {
                return Err(ValidateError::BadMemIndex { k: i.k, at });
            }
            if class == ALU
                && i.code & SRC_X == 0
                && matches!(i.code & 0xf0, 0x30 | 0x90)
                && i.k == 0
            {
                return Err(ValidateError::DivByZero { at });
            }
            if class == JMP {
                let ok = if i.code & 0xf0 == 0 {
                    // libpcap's `protochain` emits backward `ja` (negative k).
                    let target = at as i64 + 1 + i64::from(i.k as i32);
                    (0..n as i64).contains(&target)
                } else {
                    at + 1 + usize::from(i.jt.max(i.jf)) < n
                };
                if !ok {
                    return Err(ValidateError::JumpOutOfRange { at });
                }
            }
        }
        if insns[n - 1].code & 0x07 != RET {
            return Err(ValidateError::NoFinalReturn);
        }
        Ok(Program { insns })
    }

    /// The validated instructions.
    pub fn insns(&self) -> &[Insn] {
        &self.insns
    }

    /// Runs the program on `pkt` (captured bytes) whose wire length is
    /// `wire_len`; returns the number of bytes to keep (0 = reject).
    pub fn run(&self, pkt: &[u8], wire_len: u32) -> u32 {
        let mut a: u32 = 0;
        let mut x: u32 = 0;
        let mut mem = [0u32; 16];
        let mut pc = 0usize;
        let insns = &self.insns;
        let mut steps = 0u32;
        loop {
            steps += 1;
            if steps > MAX_STEPS {
                return 0;
            }
            // Validation guarantees pc stays in range and the last insn returns.
            let Some(i) = insns.get(pc) else { return 0 };
            pc += 1;
            let k = i.k;
            match i.code & 0x07 {
                LD => {
                    a = match i.code & 0xe0 {
                        IMM => k,
                        ABS => match load(pkt, k as usize, i.code & 0x18) {
                            Some(v) => v,
                            None => return 0,
                        },
                        IND => match load(pkt, x.wrapping_add(k) as usize, i.code & 0x18) {
                            Some(v) => v,
                            None => return 0,
                        },
                        MEM => mem[(k & 15) as usize],
                        _ => wire_len,
                    }
                }
                LDX => {
                    x = match i.code & 0xe0 {
                        IMM => k,
                        MEM => mem[(k & 15) as usize],
                        LEN => wire_len,
                        _ => match pkt.get(k as usize) {
                            Some(b) => u32::from(b & 0x0f) * 4,
                            None => return 0,
                        },
                    }
                }
                ST => mem[(k & 15) as usize] = a,
                STX => mem[(k & 15) as usize] = x,
                ALU => {
                    let v = if i.code & SRC_X != 0 { x } else { k };
                    a = match i.code & 0xf0 {
                        0x00 => a.wrapping_add(v),
                        0x10 => a.wrapping_sub(v),
                        0x20 => a.wrapping_mul(v),
                        0x30 => a.checked_div(v).unwrap_or(0),
                        0x40 => a | v,
                        0x50 => a & v,
                        0x60 => a.checked_shl(v).unwrap_or(0),
                        0x70 => a.checked_shr(v).unwrap_or(0),
                        0x80 => a.wrapping_neg(),
                        0x90 => a.checked_rem(v).unwrap_or(0),
                        _ => a ^ v,
                    };
                    if (i.code & 0xf0 == 0x30 || i.code & 0xf0 == 0x90) && v == 0 {
                        return 0;
                    }
                }
                JMP => {
                    let v = if i.code & SRC_X != 0 { x } else { k };
                    let cond = match i.code & 0xf0 {
                        0x00 => {
                            pc = (pc as i64 + i64::from(k as i32)) as usize;
                            continue;
                        }
                        0x10 => a == v,
                        0x20 => a > v,
                        0x30 => a >= v,
                        _ => a & v != 0,
                    };
                    pc += usize::from(if cond { i.jt } else { i.jf });
                }
                RET => {
                    return match i.code & 0x18 {
                        0x00 => k,
                        0x08 => x,
                        _ => a,
                    }
                }
                MISC => {
                    if i.code & 0xf8 == 0 {
                        x = a;
                    } else {
                        a = x;
                    }
                }
                _ => return 0,
            }
        }
    }
}

fn load(pkt: &[u8], at: usize, size: u16) -> Option<u32> {
    match size {
        W => pkt
            .get(at..at.checked_add(4)?)
            .map(|s| u32::from_be_bytes([s[0], s[1], s[2], s[3]])),
        H => pkt
            .get(at..at.checked_add(2)?)
            .map(|s| u32::from(u16::from_be_bytes([s[0], s[1]]))),
        _ => pkt.get(at).map(|&b| u32::from(b)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn insn(code: u16, jt: u8, jf: u8, k: u32) -> Insn {
        Insn { code, jt, jf, k }
    }

    #[test]
    fn rejects_bad_programs() {
        assert_eq!(Program::new(vec![]), Err(ValidateError::Empty));
        assert_eq!(
            Program::new(vec![insn(0x15, 5, 0, 1), insn(0x06, 0, 0, 0)]),
            Err(ValidateError::JumpOutOfRange { at: 0 })
        );
        assert_eq!(
            Program::new(vec![insn(0x00, 0, 0, 1)]),
            Err(ValidateError::NoFinalReturn)
        );
        assert_eq!(
            Program::new(vec![insn(0x34, 0, 0, 0), insn(0x06, 0, 0, 0)]),
            Err(ValidateError::DivByZero { at: 0 })
        );
    }

    #[test]
    fn alu_and_scratch() {
        // A = len; A *= 3; M[2] = A; X = M[2]; A = X; A -= 1; ret A
        let p = Program::new(vec![
            insn(0x80, 0, 0, 0),
            insn(0x24, 0, 0, 3),
            insn(0x02, 0, 0, 2),
            insn(0x61, 0, 0, 2),
            insn(0x87, 0, 0, 0),
            insn(0x14, 0, 0, 1),
            insn(0x16, 0, 0, 0),
        ])
        .unwrap();
        assert_eq!(p.run(&[], 10), 29);
    }

    #[test]
    fn backward_loop_is_stopped() {
        let p = Program::new(vec![insn(0x05, 0, 0, u32::MAX), insn(0x06, 0, 0, 1)]).unwrap();
        assert_eq!(p.run(&[], 0), 0);
        assert!(Program::new(vec![insn(0x05, 0, 0, (-2i32) as u32), insn(0x06, 0, 0, 1)]).is_err());
    }

    proptest! {
        #[test]
        fn random_programs_never_panic(
            raw in proptest::collection::vec((any::<u16>(), 0u8..4, 0u8..4, any::<u32>()), 1..20),
            pkt in proptest::collection::vec(any::<u8>(), 0..80),
        ) {
            let mut insns: Vec<Insn> = raw.into_iter().map(|(c, jt, jf, k)| insn(c & 0xff, jt, jf, k % 64)).collect();
            insns.push(insn(0x06, 0, 0, 1));
            if let Ok(p) = Program::new(insns) {
                let _ = p.run(&pkt, pkt.len() as u32);
            }
        }
    }
}
