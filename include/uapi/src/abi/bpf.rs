//! The bpf(2) system call's ABI (`include/uapi/linux/bpf.h`, bpf(2)): commands, program and
//! attach types, flags, the eBPF instruction, `union bpf_attr`'s views for the commands the
//! kernel implements (each a struct of its own here, the union's members at offset 0),
//! `struct bpf_prog_info` and the cgroup device program's context.

use static_assertions::const_assert_eq;

/// `BPF_MAP_CREATE`.
pub const BPF_MAP_CREATE: u32 = 0;
/// `BPF_PROG_LOAD`.
pub const BPF_PROG_LOAD: u32 = 5;
/// `BPF_OBJ_PIN`.
pub const BPF_OBJ_PIN: u32 = 6;
/// `BPF_PROG_ATTACH`.
pub const BPF_PROG_ATTACH: u32 = 8;
/// `BPF_PROG_DETACH`.
pub const BPF_PROG_DETACH: u32 = 9;
/// `BPF_PROG_GET_NEXT_ID`.
pub const BPF_PROG_GET_NEXT_ID: u32 = 11;
/// `BPF_PROG_GET_FD_BY_ID`.
pub const BPF_PROG_GET_FD_BY_ID: u32 = 13;
/// `BPF_OBJ_GET_INFO_BY_FD`.
pub const BPF_OBJ_GET_INFO_BY_FD: u32 = 15;
/// `BPF_PROG_QUERY`.
pub const BPF_PROG_QUERY: u32 = 16;
/// `BPF_LINK_CREATE`.
pub const BPF_LINK_CREATE: u32 = 28;

/// `BPF_PROG_TYPE_CGROUP_SKB`.
pub const BPF_PROG_TYPE_CGROUP_SKB: u32 = 8;
/// `BPF_PROG_TYPE_CGROUP_DEVICE`: the device controller of cgroup v2.
pub const BPF_PROG_TYPE_CGROUP_DEVICE: u32 = 15;
/// `BPF_CGROUP_DEVICE` (`enum bpf_attach_type`).
pub const BPF_CGROUP_DEVICE: u32 = 6;

/// `BPF_F_ALLOW_OVERRIDE`: a descendant may replace the program.
pub const BPF_F_ALLOW_OVERRIDE: u32 = 1 << 0;
/// `BPF_F_ALLOW_MULTI`: several programs per group, the ancestors' run too.
pub const BPF_F_ALLOW_MULTI: u32 = 1 << 1;
/// `BPF_F_REPLACE`: replace `replace_bpf_fd`'s program in place.
pub const BPF_F_REPLACE: u32 = 1 << 2;
/// `BPF_F_QUERY_EFFECTIVE`: query the effective array, not the group's own list.
pub const BPF_F_QUERY_EFFECTIVE: u32 = 1 << 0;
/// `BPF_F_RDONLY` / `BPF_F_WRONLY` (open_flags of the GET_FD_BY_ID commands).
pub const BPF_F_RDONLY: u32 = 1 << 3;
pub const BPF_F_WRONLY: u32 = 1 << 4;

/// `BPF_OBJ_NAME_LEN`.
pub const BPF_OBJ_NAME_LEN: usize = 16;
/// `BPF_TAG_SIZE`.
pub const BPF_TAG_SIZE: usize = 8;
/// `BPF_MAXINSNS`: the unprivileged program size limit.
pub const BPF_MAXINSNS: u32 = 4096;
/// `BPF_COMPLEXITY_LIMIT_INSNS` (include/linux/bpf.h): the privileged limit.
pub const BPF_COMPLEXITY_LIMIT_INSNS: u32 = 1_000_000;
/// `BPF_CGROUP_MAX_PROGS` (kernel/bpf/cgroup.c): programs per group and attach type.
pub const BPF_CGROUP_MAX_PROGS: usize = 64;

/// `BPF_DEVCG_ACC_MKNOD`, `_READ`, `_WRITE` (the access in `access_type`'s upper 16 bits).
pub const BPF_DEVCG_ACC_MKNOD: u32 = 1 << 0;
pub const BPF_DEVCG_ACC_READ: u32 = 1 << 1;
pub const BPF_DEVCG_ACC_WRITE: u32 = 1 << 2;
/// `BPF_DEVCG_DEV_BLOCK`, `_CHAR` (`access_type`'s lower 16 bits).
pub const BPF_DEVCG_DEV_BLOCK: u32 = 1 << 0;
pub const BPF_DEVCG_DEV_CHAR: u32 = 1 << 1;

/// The size of `union bpf_attr` this kernel knows (through `prog_load.log_true_size`,
/// Linux 6.4): bytes a caller passes beyond it must be zero (`bpf_check_uarg_tail_zero`).
pub const BPF_ATTR_SIZE: usize = 144;

/// Instruction classes (`BPF_CLASS(code)`, include/uapi/linux/bpf_common.h and bpf.h).
pub mod insn {
    pub const BPF_LD: u8 = 0x00;
    pub const BPF_LDX: u8 = 0x01;
    pub const BPF_ST: u8 = 0x02;
    pub const BPF_STX: u8 = 0x03;
    pub const BPF_ALU: u8 = 0x04;
    pub const BPF_JMP: u8 = 0x05;
    pub const BPF_JMP32: u8 = 0x06;
    pub const BPF_ALU64: u8 = 0x07;
    /// Sizes (`BPF_SIZE(code)`).
    pub const BPF_W: u8 = 0x00;
    pub const BPF_H: u8 = 0x08;
    pub const BPF_B: u8 = 0x10;
    pub const BPF_DW: u8 = 0x18;
    /// Modes (`BPF_MODE(code)`).
    pub const BPF_IMM: u8 = 0x00;
    pub const BPF_MEM: u8 = 0x60;
    /// Source (`BPF_SRC(code)`).
    pub const BPF_K: u8 = 0x00;
    pub const BPF_X: u8 = 0x08;
    /// ALU operations (`BPF_OP(code)`).
    pub const BPF_ADD: u8 = 0x00;
    pub const BPF_SUB: u8 = 0x10;
    pub const BPF_MUL: u8 = 0x20;
    pub const BPF_DIV: u8 = 0x30;
    pub const BPF_OR: u8 = 0x40;
    pub const BPF_AND: u8 = 0x50;
    pub const BPF_LSH: u8 = 0x60;
    pub const BPF_RSH: u8 = 0x70;
    pub const BPF_NEG: u8 = 0x80;
    pub const BPF_MOD: u8 = 0x90;
    pub const BPF_XOR: u8 = 0xa0;
    pub const BPF_MOV: u8 = 0xb0;
    pub const BPF_ARSH: u8 = 0xc0;
    pub const BPF_END: u8 = 0xd0;
    /// Jump operations.
    pub const BPF_JA: u8 = 0x00;
    pub const BPF_JEQ: u8 = 0x10;
    pub const BPF_JGT: u8 = 0x20;
    pub const BPF_JGE: u8 = 0x30;
    pub const BPF_JSET: u8 = 0x40;
    pub const BPF_JNE: u8 = 0x50;
    pub const BPF_JSGT: u8 = 0x60;
    pub const BPF_JSGE: u8 = 0x70;
    pub const BPF_CALL: u8 = 0x80;
    pub const BPF_EXIT: u8 = 0x90;
    pub const BPF_JLT: u8 = 0xa0;
    pub const BPF_JLE: u8 = 0xb0;
    pub const BPF_JSLT: u8 = 0xc0;
    pub const BPF_JSLE: u8 = 0xd0;
    /// `BPF_TO_BE` (the source bit of `BPF_END`; `BPF_TO_LE` is 0).
    pub const BPF_TO_BE: u8 = 0x08;
}

crate::pod_struct! {
    /// `struct bpf_insn`: opcode, `dst_reg:4 src_reg:4` (dst in the low nibble on
    /// little-endian), offset, immediate.
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    pub struct BpfInsn {
        pub code: u8,
        pub regs: u8,
        pub off: i16,
        pub imm: i32,
    }
}
const_assert_eq!(core::mem::size_of::<BpfInsn>(), 8);

impl BpfInsn {
    /// The destination register.
    pub fn dst(&self) -> u8 {
        self.regs & 0xf
    }
    /// The source register.
    pub fn src(&self) -> u8 {
        self.regs >> 4
    }
}

crate::pod_struct! {
    /// `struct bpf_cgroup_dev_ctx`: what a device program reads.
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    pub struct BpfCgroupDevCtx {
        /// `(access << 16) | type`.
        pub access_type: u32,
        pub major: u32,
        pub minor: u32,
    }
}
const_assert_eq!(core::mem::size_of::<BpfCgroupDevCtx>(), 12);

crate::pod_struct! {
    /// `union bpf_attr` for `BPF_PROG_LOAD` (through `log_true_size`).
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    pub struct ProgLoadAttr {
        pub prog_type: u32,
        pub insn_cnt: u32,
        pub insns: u64,
        pub license: u64,
        pub log_level: u32,
        pub log_size: u32,
        pub log_buf: u64,
        pub kern_version: u32,
        pub prog_flags: u32,
        pub prog_name: [u8; BPF_OBJ_NAME_LEN],
        pub prog_ifindex: u32,
        pub expected_attach_type: u32,
        pub prog_btf_fd: u32,
        pub func_info_rec_size: u32,
        pub func_info: u64,
        pub func_info_cnt: u32,
        pub line_info_rec_size: u32,
        pub line_info: u64,
        pub line_info_cnt: u32,
        pub attach_btf_id: u32,
        pub attach_prog_fd: u32,
        pub core_relo_cnt: u32,
        pub fd_array: u64,
        pub core_relos: u64,
        pub core_relo_rec_size: u32,
        pub log_true_size: u32,
    }
}
const_assert_eq!(core::mem::size_of::<ProgLoadAttr>(), BPF_ATTR_SIZE);
const_assert_eq!(core::mem::offset_of!(ProgLoadAttr, log_buf), 32);
const_assert_eq!(core::mem::offset_of!(ProgLoadAttr, prog_name), 48);
const_assert_eq!(
    core::mem::offset_of!(ProgLoadAttr, expected_attach_type),
    68
);
const_assert_eq!(core::mem::offset_of!(ProgLoadAttr, fd_array), 120);
const_assert_eq!(core::mem::offset_of!(ProgLoadAttr, log_true_size), 140);

crate::pod_struct! {
    /// `union bpf_attr` for `BPF_PROG_ATTACH` / `BPF_PROG_DETACH`.
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    pub struct AttachAttr {
        pub target_fd: u32,
        pub attach_bpf_fd: u32,
        pub attach_type: u32,
        pub attach_flags: u32,
        pub replace_bpf_fd: u32,
    }
}
const_assert_eq!(core::mem::size_of::<AttachAttr>(), 20);

crate::pod_struct! {
    /// `union bpf_attr` for `BPF_PROG_QUERY`.
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    pub struct QueryAttr {
        pub target_fd: u32,
        pub attach_type: u32,
        pub query_flags: u32,
        pub attach_flags: u32,
        pub prog_ids: u64,
        pub prog_cnt: u32,
        pub pad: u32,
        pub prog_attach_flags: u64,
    }
}
const_assert_eq!(core::mem::size_of::<QueryAttr>(), 40);
const_assert_eq!(core::mem::offset_of!(QueryAttr, prog_cnt), 24);

crate::pod_struct! {
    /// `union bpf_attr` for the `*_GET_NEXT_ID` / `*_GET_FD_BY_ID` commands.
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    pub struct GetIdAttr {
        pub id: u32,
        pub next_id: u32,
        pub open_flags: u32,
    }
}
const_assert_eq!(core::mem::size_of::<GetIdAttr>(), 12);

crate::pod_struct! {
    /// `union bpf_attr` for `BPF_OBJ_GET_INFO_BY_FD`.
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    pub struct InfoAttr {
        pub bpf_fd: u32,
        pub info_len: u32,
        pub info: u64,
    }
}
const_assert_eq!(core::mem::size_of::<InfoAttr>(), 16);

crate::pod_struct! {
    /// `struct bpf_prog_info` (through `attach_btf_id`, Linux 6.1).
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    pub struct BpfProgInfo {
        pub prog_type: u32,
        pub id: u32,
        pub tag: [u8; BPF_TAG_SIZE],
        pub jited_prog_len: u32,
        pub xlated_prog_len: u32,
        pub jited_prog_insns: u64,
        pub xlated_prog_insns: u64,
        pub load_time: u64,
        pub created_by_uid: u32,
        pub nr_map_ids: u32,
        pub map_ids: u64,
        pub name: [u8; BPF_OBJ_NAME_LEN],
        pub ifindex: u32,
        /// `gpl_compatible:1` in bit 0.
        pub flags: u32,
        pub netns_dev: u64,
        pub netns_ino: u64,
        pub nr_jited_ksyms: u32,
        pub nr_jited_func_lens: u32,
        pub jited_ksyms: u64,
        pub jited_func_lens: u64,
        pub btf_id: u32,
        pub func_info_rec_size: u32,
        pub func_info: u64,
        pub nr_func_info: u32,
        pub nr_line_info: u32,
        pub line_info: u64,
        pub jited_line_info: u64,
        pub nr_jited_line_info: u32,
        pub line_info_rec_size: u32,
        pub jited_line_info_rec_size: u32,
        pub nr_prog_tags: u32,
        pub prog_tags: u64,
        pub run_time_ns: u64,
        pub run_cnt: u64,
        pub recursion_misses: u64,
        pub verified_insns: u32,
        pub attach_btf_obj_id: u32,
        pub attach_btf_id: u32,
        pub pad: u32,
    }
}
const_assert_eq!(core::mem::size_of::<BpfProgInfo>(), 232);
const_assert_eq!(core::mem::offset_of!(BpfProgInfo, load_time), 40);
const_assert_eq!(core::mem::offset_of!(BpfProgInfo, name), 64);
const_assert_eq!(core::mem::offset_of!(BpfProgInfo, btf_id), 128);
const_assert_eq!(core::mem::offset_of!(BpfProgInfo, verified_insns), 216);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::abi::pod::Pod;

    #[test]
    fn insn_registers_are_nibbles() {
        // BPF_LDX|BPF_MEM|BPF_W r2 = *(u32 *)(r1 + 4): dst 2, src 1.
        let i = BpfInsn::read_le(&[0x61, 0x12, 4, 0, 0, 0, 0, 0]);
        assert_eq!((i.dst(), i.src(), i.off), (2, 1, 4));
        assert_eq!(i.code, insn::BPF_LDX | insn::BPF_MEM | insn::BPF_W);
    }

    #[test]
    fn numbers_match_the_header() {
        assert_eq!(
            (BPF_PROG_LOAD, BPF_PROG_QUERY, BPF_LINK_CREATE),
            (5, 16, 28)
        );
        assert_eq!((BPF_PROG_TYPE_CGROUP_DEVICE, BPF_CGROUP_DEVICE), (15, 6));
        assert_eq!(BPF_DEVCG_DEV_CHAR | BPF_DEVCG_ACC_WRITE << 16, 0x4_0002);
    }
}
