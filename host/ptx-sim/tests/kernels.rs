//! Hand-written PTX kernels with results worked out by hand, and the seeded
//! bugs that the checks must catch.

use std::sync::Arc;

use cudamin_ptx_sim::{Device, Launch, Module, SimError, Space};

const HEAD: &str = ".version 7.0\n.target sm_70\n.address_size 64\n";

fn device(body: &str) -> Device {
    let src = format!("{HEAD}{body}");
    let m = Module::parse(&src).unwrap_or_else(|e| panic!("{e}"));
    Device::new(Arc::new(m))
}

fn cfg(grid: u32, block: u32) -> Launch {
    Launch {
        grid: [grid, 1, 1],
        block: [block, 1, 1],
        dynamic_shared_bytes: 0,
        max_threads_per_block: 1024,
    }
}

fn put_f64(dev: &mut Device, v: &[f64]) -> u64 {
    let a = dev.alloc(v.len() * 8);
    let bytes: Vec<u8> = v.iter().flat_map(|x| x.to_le_bytes()).collect();
    dev.write(a, &bytes).expect("write");
    a
}

fn get_u64(dev: &Device, a: u64, n: usize) -> Vec<u64> {
    let mut b = vec![0u8; n * 8];
    dev.read(a, &mut b).expect("read");
    b.chunks(8)
        .map(|c| u64::from_le_bytes(c.try_into().expect("8")))
        .collect()
}

fn get_f64(dev: &Device, a: u64, n: usize) -> Vec<f64> {
    get_u64(dev, a, n).into_iter().map(f64::from_bits).collect()
}

const VADD: &str = r#"
.visible .entry vadd(
	.param .u64 vadd_a,
	.param .u64 vadd_b,
	.param .u64 vadd_c,
	.param .u32 vadd_n
)
{
	.reg .pred 	%p<2>;
	.reg .b32 	%r<6>;
	.reg .b64 	%rd<12>;

	ld.param.u64 	%rd1, [vadd_a];
	ld.param.u64 	%rd2, [vadd_b];
	ld.param.u64 	%rd3, [vadd_c];
	ld.param.u32 	%r1, [vadd_n];
	mov.u32 	%r2, %ctaid.x;
	mov.u32 	%r3, %ntid.x;
	mov.u32 	%r4, %tid.x;
	mad.lo.s32 	%r5, %r2, %r3, %r4;
	setp.ge.u32 	%p1, %r5, %r1;
	@%p1 bra 	$L__done;
	cvta.to.global.u64 	%rd1, %rd1;
	cvta.to.global.u64 	%rd2, %rd2;
	cvta.to.global.u64 	%rd3, %rd3;
	mul.wide.u32 	%rd4, %r5, 8;
	add.s64 	%rd5, %rd1, %rd4;
	add.s64 	%rd6, %rd2, %rd4;
	add.s64 	%rd7, %rd3, %rd4;
	ld.global.f64 	%rd8, [%rd5];
	ld.global.nc.f64 	%rd9, [%rd6];
	add.rn.f64 	%rd10, %rd8, %rd9;
	st.global.f64 	[%rd7], %rd10;
$L__done:
	ret;
}
"#;

#[test]
fn vector_add_over_several_blocks() {
    let mut dev = device(VADD);
    let n = 150usize;
    let a: Vec<f64> = (0..n).map(|i| i as f64).collect();
    let b: Vec<f64> = (0..n).map(|i| 0.25 * i as f64 + 1.0).collect();
    let (da, db) = (put_f64(&mut dev, &a), put_f64(&mut dev, &b));
    let dc = dev.alloc(n * 8);
    let nn = (n as u32).to_le_bytes();
    dev.launch(
        "vadd",
        cfg(3, 64),
        &[&da.to_le_bytes(), &db.to_le_bytes(), &dc.to_le_bytes(), &nn],
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let c = get_f64(&dev, dc, n);
    for i in 0..n {
        assert_eq!(c[i], a[i] + b[i]);
    }
    assert!(dev.executed().contains("vadd"));
}

/// The cost counts of two launches of `vadd` over 150 elements, worked out by hand: each
/// element reads two f64 and writes one, with one f64 addition; each array spans
/// ⌈1200 / 32⌉ = 38 sectors (allocations are 256-byte aligned).
#[test]
fn counts_are_those_worked_out_by_hand() {
    let mut dev = device(VADD);
    let n = 150usize;
    let (da, db) = (
        put_f64(&mut dev, &vec![1.0; n]),
        put_f64(&mut dev, &vec![2.0; n]),
    );
    let dc = dev.alloc(n * 8);
    let args = [da.to_le_bytes(), db.to_le_bytes(), dc.to_le_bytes()];
    let nn = (n as u32).to_le_bytes();
    let launch = |dev: &mut Device| {
        dev.launch("vadd", cfg(3, 64), &[&args[0], &args[1], &args[2], &nn])
            .unwrap_or_else(|e| panic!("{e}"))
    };
    launch(&mut dev);
    assert!(dev.counts().is_none(), "off by default");
    dev.count(true);
    launch(&mut dev);
    launch(&mut dev);
    let c = dev.counts().expect("counting")["vadd"];
    assert_eq!((c.launches, c.threads), (2, 2 * 192));
    assert_eq!(
        (c.global_read_bytes, c.global_write_bytes),
        (2 * 2400, 2 * 1200)
    );
    assert_eq!(
        (c.global_sectors_read, c.global_sectors_written),
        (2 * 76, 2 * 38)
    );
    assert_eq!(c.fp64_ops, 2 * 150);
    assert_eq!((c.local_bytes, c.shared_bytes, c.block_barriers), (0, 0, 0));
    assert!(c.instructions > 2 * 150 * 10, "{c:?}");
    dev.count(false);
    assert!(dev.counts().is_none());
}

#[test]
fn seeded_out_of_bounds_global_is_reported() {
    let mut dev = device(VADD);
    let n = 100usize;
    let da = put_f64(&mut dev, &vec![1.0; n]);
    let db = put_f64(&mut dev, &vec![2.0; n]);
    let dc = dev.alloc(n * 8);
    // The guard says 128 elements but only 100 exist.
    let nn = 128u32.to_le_bytes();
    let e = dev
        .launch(
            "vadd",
            cfg(2, 64),
            &[&da.to_le_bytes(), &db.to_le_bytes(), &dc.to_le_bytes(), &nn],
        )
        .expect_err("must fault");
    match &e {
        SimError::MemoryOutOfBounds {
            at,
            space,
            address,
            size,
            write,
        } => {
            assert_eq!(at.kernel, "vadd");
            assert_eq!(at.block, [1, 0, 0]);
            assert_eq!(at.thread, [36, 0, 0]);
            assert_eq!(*space, Space::Global);
            assert_eq!(*address, da + 800);
            assert_eq!(*size, 8);
            assert!(!write);
        }
        other => panic!("wrong error {other}"),
    }
    let text = e.to_string();
    assert!(
        text.contains("vadd") && text.contains("thread (36,0,0)"),
        "{text}"
    );
}

const BSUM: &str = r#"
.shared .align 8 .f64 bsum_buf[64];

.visible .entry bsum(
	.param .u64 bsum_x,
	.param .u64 bsum_out
)
{
	.reg .pred 	%p<3>;
	.reg .b32 	%r<8>;
	.reg .b64 	%rd<16>;

	ld.param.u64 	%rd1, [bsum_x];
	ld.param.u64 	%rd2, [bsum_out];
	mov.u32 	%r1, %tid.x;
	mov.u32 	%r2, %ctaid.x;
	mov.u32 	%r3, %ntid.x;
	mad.lo.s32 	%r4, %r2, %r3, %r1;
	mul.wide.u32 	%rd3, %r4, 8;
	add.s64 	%rd4, %rd1, %rd3;
	ld.global.f64 	%rd5, [%rd4];
	mov.u64 	%rd6, bsum_buf;
	mul.wide.u32 	%rd7, %r1, 8;
	add.s64 	%rd8, %rd6, %rd7;
	st.shared.f64 	[%rd8], %rd5;
	bar.sync 	0;
	shr.u32 	%r5, %r3, 1;
$L__loop:
	setp.eq.u32 	%p1, %r5, 0;
	@%p1 bra 	$L__end;
	setp.ge.u32 	%p2, %r1, %r5;
	@%p2 bra 	$L__skip;
	mul.wide.u32 	%rd9, %r5, 8;
	add.s64 	%rd10, %rd8, %rd9;
	ld.shared.f64 	%rd11, [%rd10];
	ld.shared.f64 	%rd12, [%rd8];
	add.rn.f64 	%rd12, %rd12, %rd11;
	st.shared.f64 	[%rd8], %rd12;
$L__skip:
	bar.sync 	0;
	shr.u32 	%r5, %r5, 1;
	bra.uni 	$L__loop;
$L__end:
	setp.ne.u32 	%p1, %r1, 0;
	@%p1 bra 	$L__done;
	ld.shared.f64 	%rd13, [bsum_buf];
	mul.wide.u32 	%rd14, %r2, 8;
	add.s64 	%rd15, %rd2, %rd14;
	st.global.f64 	[%rd15], %rd13;
$L__done:
	ret;
}
"#;

#[test]
fn block_sum_in_shared_memory() {
    let mut dev = device(BSUM);
    let x: Vec<f64> = (0..128).map(|i| i as f64).collect();
    let dx = put_f64(&mut dev, &x);
    let dout = dev.alloc(16);
    dev.launch(
        "bsum",
        cfg(2, 64),
        &[&dx.to_le_bytes(), &dout.to_le_bytes()],
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let out = get_f64(&dev, dout, 2);
    assert_eq!(
        out,
        vec![(0..64).sum::<i32>() as f64, (64..128).sum::<i32>() as f64]
    );
}

const WARP: &str = r#"
.visible .entry warp_sum(
	.param .u64 warp_sum_out
)
{
	.reg .pred 	%p<2>;
	.reg .b32 	%r<20>;
	.reg .b64 	%rd<4>;

	ld.param.u64 	%rd1, [warp_sum_out];
	mov.u32 	%r1, %tid.x;
	add.s32 	%r2, %r1, 1;
	mov.b32 	%r10, -1;
	shfl.sync.down.b32 	%r3, %r2, 16, 31, %r10;
	add.s32 	%r2, %r2, %r3;
	shfl.sync.down.b32 	%r3, %r2, 8, 31, %r10;
	add.s32 	%r2, %r2, %r3;
	shfl.sync.down.b32 	%r3, %r2, 4, 31, %r10;
	add.s32 	%r2, %r2, %r3;
	shfl.sync.down.b32 	%r3, %r2, 2, 31, %r10;
	add.s32 	%r2, %r2, %r3;
	shfl.sync.down.b32 	%r3, %r2, 1, 31, %r10;
	add.s32 	%r2, %r2, %r3;
	setp.ne.u32 	%p1, %r1, 0;
	@%p1 bra 	$L__done;
	st.global.u32 	[%rd1], %r2;
$L__done:
	ret;
}

.visible .entry shfl_modes(
	.param .u64 shfl_modes_out
)
{
	.reg .pred 	%p<2>;
	.reg .b32 	%r<20>;
	.reg .b64 	%rd<8>;

	ld.param.u64 	%rd1, [shfl_modes_out];
	mov.u32 	%r1, %tid.x;
	add.s32 	%r2, %r1, 100;
	mul.wide.u32 	%rd2, %r1, 20;
	add.s64 	%rd3, %rd1, %rd2;
	// begin inline asm
	{ .reg .b32 v, w;
	.reg .pred q;
shfl.sync.down.b32 v|q, %r2, 4, 0x101f, -1;
st.global.u32 [%rd3], v;
selp.u32 w, 1, 0, q;
st.global.u32 [%rd3+4], w;
shfl.sync.up.b32 v, %r2, 1, 0, -1;
st.global.u32 [%rd3+8], v;
shfl.sync.bfly.b32 v, %r2, 3, 0x1f, -1;
st.global.u32 [%rd3+12], v;
shfl.sync.idx.b32 v, %r2, 5, 0x1f, -1;
st.global.u32 [%rd3+16], v; }
	// end inline asm
	ret;
}
"#;

#[test]
fn warp_reduction_with_shfl_down() {
    let mut dev = device(WARP);
    let out = dev.alloc(4);
    dev.launch("warp_sum", cfg(1, 32), &[&out.to_le_bytes()])
        .unwrap_or_else(|e| panic!("{e}"));
    let mut b = [0u8; 4];
    dev.read(out, &mut b).expect("read");
    assert_eq!(u32::from_le_bytes(b), (1..=32).sum::<u32>());
}

#[test]
fn shuffle_modes_with_segments_and_predicate() {
    let mut dev = device(WARP);
    let out = dev.alloc(32 * 20);
    dev.launch("shfl_modes", cfg(1, 32), &[&out.to_le_bytes()])
        .unwrap_or_else(|e| panic!("{e}"));
    let mut b = vec![0u8; 32 * 20];
    dev.read(out, &mut b).expect("read");
    let w: Vec<u32> = b
        .chunks(4)
        .map(|c| u32::from_le_bytes(c.try_into().expect("4")))
        .collect();
    let lane = |l: usize| &w[l * 5..l * 5 + 5];
    // down 4 within 16-lane segments: lane 13 would cross into the next
    // segment, so it keeps its own value and the predicate is false.
    assert_eq!(lane(3)[..2], [107, 1]);
    assert_eq!(lane(13)[..2], [113, 0]);
    assert_eq!(lane(20)[..2], [124, 1]);
    assert_eq!(lane(29)[..2], [129, 0]);
    // up 1: lane 0 keeps its own value.
    assert_eq!(lane(0)[2], 100);
    assert_eq!(lane(5)[2], 104);
    // bfly 3 and idx 5.
    assert_eq!(lane(5)[3], 106);
    assert_eq!(lane(6)[3], 105);
    for l in 0..32 {
        assert_eq!(lane(l)[4], 105);
    }
}

#[test]
fn shuffle_with_a_missing_lane_is_reported() {
    let mut dev = device(WARP);
    let out = dev.alloc(4);
    // Only 20 threads, but the member mask names all 32 lanes.
    let e = dev
        .launch("warp_sum", cfg(1, 20), &[&out.to_le_bytes()])
        .expect_err("must hang");
    match e {
        SimError::ShuffleMaskMissingLanes { at, mask, missing } => {
            assert_eq!(at.kernel, "warp_sum");
            assert_eq!(mask, u32::MAX);
            assert_eq!(missing, 0xfff0_0000);
        }
        other => panic!("wrong error {other}"),
    }
}

const BRX_CALL: &str = r#"
.func  (.param .b64 func_retval0) twice(
	.param .b64 twice_param_0
)
;
.func store_sq(
	.param .b64 store_sq_param_0,
	.param .b64 store_sq_param_1
)
{
	.reg .b64 	%rd<4>;

	ld.param.b64 	%rd1, [store_sq_param_0];
	ld.param.b64 	%rd2, [store_sq_param_1];
	mul.lo.s64 	%rd3, %rd2, %rd2;
	st.b64 	[%rd1], %rd3;
	ret;
}

.func  (.param .b64 func_retval0) twice(
	.param .b64 twice_param_0
)
{
	.reg .b64 	%rd<3>;

	ld.param.b64 	%rd1, [twice_param_0];
	shl.b64 	%rd2, %rd1, 1;
	st.param.b64 	[func_retval0], %rd2;
	ret;
}

.visible .entry switch3(
	.param .u64 switch3_out
)
{
	.local .align 8 .b8 	__local_depot0[16];
	.reg .b64 	%SP;
	.reg .b64 	%SPL;
	.reg .b32 	%r<4>;
	.reg .b64 	%rd<12>;

	mov.u64 	%SPL, __local_depot0;
	cvta.local.u64 	%SP, %SPL;
	ld.param.u64 	%rd1, [switch3_out];
	mov.u32 	%r1, %tid.x;
	rem.u32 	%r2, %r1, 3;
	mul.wide.u32 	%rd2, %r1, 8;
	add.s64 	%rd3, %rd1, %rd2;
	$L_brx_0: .branchtargets
		$L__c0,
		$L__c1,
		$L__c2;
	brx.idx 	%r2, $L_brx_0;
$L__c0:
	mov.b64 	%rd4, 10;
	bra.uni 	$L__join;
$L__c1:
	mov.b64 	%rd4, 20;
	bra.uni 	$L__join;
$L__c2:
	mov.b64 	%rd4, 30;
$L__join:
	add.s64 	%rd5, %SP, 8;
	{ // callseq 0, 0
	.param .b64 param0;
	.param .b64 param1;
	st.param.b64 	[param0], %rd5;
	st.param.b64 	[param1], %rd4;
	call.uni store_sq, (param0, param1);
	} // callseq 0
	ld.local.b64 	%rd6, [%SPL+8];
	{ // callseq 1, 0
	.param .b64 param0;
	st.param.b64 	[param0], %rd6;
	.param .b64 retval0;
	call.uni (retval0), twice, (param0);
	ld.param.b64 	%rd7, [retval0];
	} // callseq 1
	st.global.u64 	[%rd3], %rd7;
	ret;
}
"#;

#[test]
fn brx_idx_call_and_local_memory() {
    let mut dev = device(BRX_CALL);
    let out = dev.alloc(6 * 8);
    dev.launch("switch3", cfg(1, 6), &[&out.to_le_bytes()])
        .unwrap_or_else(|e| panic!("{e}"));
    let got = get_u64(&dev, out, 6);
    assert_eq!(got, vec![200, 800, 1800, 200, 800, 1800]);
}

const F64EDGE: &str = r#"
.visible .entry edges(
	.param .u64 edges_out
)
{
	.reg .b32 	%r<20>;
	.reg .b64 	%rd<40>;

	ld.param.u64 	%rd1, [edges_out];
	copysign.f64 	%rd2, 0dBFF0000000000000, 0d4008000000000000;
	st.global.b64 	[%rd1], %rd2;
	copysign.f64 	%rd2, 0d4000000000000000, 0dC014000000000000;
	st.global.b64 	[%rd1+8], %rd2;
	min.f64 	%rd2, 0d7FF8000000000000, 0d3FF0000000000000;
	st.global.b64 	[%rd1+16], %rd2;
	max.f64 	%rd2, 0d4000000000000000, 0d7FF8000000000000;
	st.global.b64 	[%rd1+24], %rd2;
	min.f64 	%rd2, 0d0000000000000000, 0d8000000000000000;
	st.global.b64 	[%rd1+32], %rd2;
	cvt.rzi.s32.f64 	%r1, 0d4202A05F20000000;
	cvt.u64.u32 	%rd3, %r1;
	st.global.b64 	[%rd1+40], %rd3;
	cvt.rzi.s32.f64 	%r1, 0dC202A05F20000000;
	cvt.u64.u32 	%rd3, %r1;
	st.global.b64 	[%rd1+48], %rd3;
	cvt.rzi.s32.f64 	%r1, 0d7FF8000000000000;
	cvt.u64.u32 	%rd3, %r1;
	st.global.b64 	[%rd1+56], %rd3;
	cvt.rzi.s32.f64 	%r1, 0dC005999999999999A;
	cvt.u64.u32 	%rd3, %r1;
	st.global.b64 	[%rd1+64], %rd3;
	cvt.rn.f64.u64 	%rd2, 9007199254740993;
	st.global.b64 	[%rd1+72], %rd2;
	rcp.rn.f64 	%rd2, 0d4008000000000000;
	st.global.b64 	[%rd1+80], %rd2;
	mov.b32 	%r2, 1;
	shl.b32 	%r3, %r2, 40;
	cvt.u64.u32 	%rd3, %r3;
	st.global.b64 	[%rd1+88], %rd3;
	mov.b32 	%r2, -8;
	shr.s32 	%r3, %r2, 40;
	cvt.u64.u32 	%rd3, %r3;
	st.global.b64 	[%rd1+96], %rd3;
	bfe.u32 	%r3, 0xABCD1234, 8, 12;
	cvt.u64.u32 	%rd3, %r3;
	st.global.b64 	[%rd1+104], %rd3;
	clz.b64 	%r3, 0x0000100000000000;
	cvt.u64.u32 	%rd3, %r3;
	st.global.b64 	[%rd1+112], %rd3;
	mul.hi.u64 	%rd3, -1, -1;
	st.global.b64 	[%rd1+120], %rd3;
	div.u32 	%r3, 7, 0;
	cvt.u64.u32 	%rd3, %r3;
	st.global.b64 	[%rd1+128], %rd3;
	cvt.rzi.s32.f64 	%r1, 0dC005999999999999;
	cvt.u64.u32 	%rd3, %r1;
	st.global.b64 	[%rd1+136], %rd3;
	mov.b64 	%rd4, 0x1122334455667788;
	mov.b64 	{%r4, %r5}, %rd4;
	mov.b64 	%rd5, {%r5, %r4};
	st.global.b64 	[%rd1+144], %rd5;
	ret;
}
"#;

#[test]
fn f64_and_integer_edge_cases() {
    // `0dC005999999999999A` has 17 digits and must be refused.
    let bad = format!("{HEAD}{F64EDGE}");
    let e = Module::parse(&bad).expect_err("17-digit literal");
    assert!(e.text.contains("0dC005999999999999A"), "{e}");
    let fixed = F64EDGE.replace(
        "\tcvt.rzi.s32.f64 \t%r1, 0dC005999999999999A;\n",
        "\tcvt.rzi.s32.f64 \t%r1, 0dC005999999999999;\n",
    );
    let mut dev = device(&fixed);
    let out = dev.alloc(19 * 8);
    dev.launch("edges", cfg(1, 1), &[&out.to_le_bytes()])
        .unwrap_or_else(|e| panic!("{e}"));
    let u = get_u64(&dev, out, 19);
    let f = |i: usize| f64::from_bits(u[i]);
    assert_eq!(f(0), -3.0, "copysign takes the sign of the first operand");
    assert_eq!(f(1), 5.0);
    assert_eq!(f(2), 1.0, "min ignores NaN");
    assert_eq!(f(3), 2.0, "max ignores NaN");
    assert_eq!(u[4], 0x8000_0000_0000_0000, "min(+0, -0) is -0");
    assert_eq!(u[5], 0x7fff_ffff, "1e10 saturates");
    assert_eq!(u[6], 0x8000_0000, "-1e10 saturates");
    assert_eq!(u[7], 0, "NaN converts to 0");
    assert_eq!(u[8] as u32 as i32, -2, "-2.7 truncates to -2");
    assert_eq!(f(9), 9007199254740992.0, "2^53+1 rounds to even");
    assert_eq!(f(10), 1.0 / 3.0);
    assert_eq!(u[11], 0, "shl by more than the width");
    assert_eq!(u[12], 0xffff_ffff, "shr.s by more than the width");
    assert_eq!(u[13], 0xd12, "bfe");
    assert_eq!(u[14], 19, "clz");
    assert_eq!(u[15], u64::MAX - 1, "mul.hi");
    assert_eq!(u[16], 0xffff_ffff, "div by zero");
    assert_eq!(u[17] as u32 as i32, -2);
    assert_eq!(u[18], 0x5566_7788_1122_3344, "unpack and repack swapped");
}

const RACY: &str = r#"
.shared .align 4 .b32 racy_word;

.visible .entry racy(
	.param .u64 racy_out
)
{
	.reg .b32 	%r<4>;
	.reg .b64 	%rd<4>;

	ld.param.u64 	%rd1, [racy_out];
	mov.u32 	%r1, %tid.x;
	st.shared.u32 	[racy_word], %r1;
	ld.shared.u32 	%r2, [racy_word];
	mul.wide.u32 	%rd2, %r1, 4;
	add.s64 	%rd3, %rd1, %rd2;
	st.global.u32 	[%rd3], %r2;
	ret;
}
"#;

#[test]
fn seeded_shared_race_is_reported() {
    let mut dev = device(RACY);
    let out = dev.alloc(64 * 4);
    let e = dev
        .launch("racy", cfg(1, 64), &[&out.to_le_bytes()])
        .expect_err("must race");
    match &e {
        SimError::SharedRace {
            kernel,
            block,
            address,
            first,
            second,
        } => {
            assert_eq!(kernel, "racy");
            assert_eq!(*block, [0, 0, 0]);
            assert_eq!(*address, 0);
            assert_eq!(first.thread, [0, 0, 0]);
            assert!(first.write);
            assert_eq!(second.thread, [1, 0, 0]);
            assert!(second.write);
        }
        other => panic!("wrong error {other}"),
    }
    assert!(e.to_string().contains("racy"), "{e}");
}

const DIVERGENT: &str = r#"
.visible .entry divergent(
	.param .u64 divergent_out
)
{
	.reg .pred 	%p<2>;
	.reg .b32 	%r<4>;

	mov.u32 	%r1, %tid.x;
	setp.ge.u32 	%p1, %r1, 16;
	@%p1 bra 	$L__skip;
	bar.sync 	0;
$L__skip:
	ret;
}
"#;

#[test]
fn seeded_divergent_barrier_is_reported() {
    let mut dev = device(DIVERGENT);
    let e = dev
        .launch("divergent", cfg(2, 32), &[&0u64.to_le_bytes()])
        .expect_err("must hang");
    match &e {
        SimError::DivergentBarrier {
            kernel,
            block,
            detail,
        } => {
            assert_eq!(kernel, "divergent");
            assert_eq!(*block, [0, 0, 0]);
            assert!(
                detail.contains("16 of 32 threads wait at bar.sync 0 (line 15), first (0,0,0)"),
                "{detail}"
            );
            assert!(
                detail.contains("16 of 32 threads exited, first (16,0,0)"),
                "{detail}"
            );
        }
        other => panic!("wrong error {other}"),
    }
}

#[test]
fn uninitialized_register_and_trap() {
    let src = r#"
.visible .entry uninit(
	.param .u64 uninit_out
)
{
	.reg .b64 	%rd<4>;

	ld.param.u64 	%rd1, [uninit_out];
	add.s64 	%rd3, %rd1, %rd2;
	mul.lo.s64 	%rd3, %rd3, 3;
	st.global.u64 	[%rd1], %rd3;
	ret;
}

.visible .entry trapper()
{
	trap;
}
"#;
    let mut dev = device(src);
    let out = dev.alloc(8);
    // Computing with an undefined value is fine (LLVM does it with `undef`);
    // storing the result is not.
    match dev.launch("uninit", cfg(1, 1), &[&out.to_le_bytes()]) {
        Err(SimError::UninitializedRegister { register, at }) => {
            assert_eq!(register, "%rd3");
            assert_eq!(at.line, 14);
        }
        other => panic!("wrong result {other:?}"),
    }
    dev.set_strict_registers(true);
    match dev.launch("uninit", cfg(1, 1), &[&out.to_le_bytes()]) {
        Err(SimError::UninitializedRegister { register, at }) => {
            assert_eq!(register, "%rd2");
            assert_eq!(at.line, 12);
        }
        other => panic!("wrong result {other:?}"),
    }
    assert!(matches!(
        dev.launch("trapper", cfg(1, 1), &[]),
        Err(SimError::Trap { .. })
    ));
}

#[test]
fn launch_checks() {
    let mut dev = device(VADD);
    let z = 0u64.to_le_bytes();
    let n = 0u32.to_le_bytes();
    assert!(matches!(
        dev.launch("nope", cfg(1, 1), &[]),
        Err(SimError::UnknownEntry { .. })
    ));
    assert!(matches!(
        dev.launch("vadd", cfg(1, 1), &[&z, &z, &z, &z]),
        Err(SimError::BadParams { .. })
    ));
    assert!(matches!(
        dev.launch("vadd", cfg(1, 1), &[&z, &z, &z]),
        Err(SimError::BadParams { .. })
    ));
    assert!(matches!(
        dev.launch("vadd", cfg(1, 1025), &[&z, &z, &z, &n]),
        Err(SimError::LaunchLimit { .. })
    ));
    let mut l = cfg(1, 512);
    l.max_threads_per_block = 256;
    assert!(matches!(
        dev.launch("vadd", l, &[&z, &z, &z, &n]),
        Err(SimError::LaunchLimit { .. })
    ));
    l = cfg(1, 1);
    l.block = [1, 1, 65];
    assert!(matches!(
        dev.launch("vadd", l, &[&z, &z, &z, &n]),
        Err(SimError::LaunchLimit { .. })
    ));
    l = cfg(1, 1);
    l.dynamic_shared_bytes = 48 * 1024 + 1;
    assert!(matches!(
        dev.launch("vadd", l, &[&z, &z, &z, &n]),
        Err(SimError::LaunchLimit { .. })
    ));
    assert!(dev.launch("vadd", cfg(1, 1), &[&z, &z, &z, &n]).is_ok());
}

#[test]
fn memory_management() {
    let mut dev = device(VADD);
    assert_eq!(dev.alloc(0), 0);
    let a = dev.alloc(10);
    let b = dev.alloc(10);
    assert!(a != 0 && a % 256 == 0 && b % 256 == 0 && a != b);
    dev.write(a, &[1, 2, 3]).expect("write");
    dev.copy(a, b + 5, 3).expect("copy");
    let mut out = [0u8; 10];
    dev.read(b, &mut out).expect("read");
    assert_eq!(out, [0, 0, 0, 0, 0, 1, 2, 3, 0, 0]);
    assert!(dev.write(a + 8, &[0; 3]).is_err());
    dev.free(a).expect("free");
    assert!(matches!(dev.free(a), Err(SimError::FreeOfUnknown { .. })));
    assert!(dev.read(a, &mut out).is_err());
}

#[test]
fn unknown_instructions_are_refused_with_their_line() {
    let src = format!(
        "{HEAD}.visible .entry k()\n{{\n\t.reg .b32 %r<2>;\n\tfrobnicate.b32 %r1, %r0;\n\tret;\n}}\n"
    );
    let e = Module::parse(&src).expect_err("refused");
    assert_eq!(e.line, 7);
    assert!(e.text.contains("frobnicate"), "{e}");
    let src = format!(
        "{HEAD}.visible .entry k()\n{{\n\t.reg .b64 %rd<2>;\n\tadd.rz.f64 %rd1, %rd0, %rd0;\n\tret;\n}}\n"
    );
    assert!(Module::parse(&src).is_err());
}

#[test]
fn module_globals_are_initialized() {
    let src = r#"
.global .align 8 .b8 table[16] = {1, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0};

.visible .entry readtab(
	.param .u64 readtab_out
)
{
	.reg .b64 	%rd<6>;

	ld.param.u64 	%rd1, [readtab_out];
	mov.u64 	%rd2, table;
	ld.global.nc.b64 	%rd3, [%rd2+8];
	ld.global.b64 	%rd4, [table];
	add.s64 	%rd5, %rd3, %rd4;
	st.global.b64 	[%rd1], %rd5;
	ret;
}
"#;
    let mut dev = device(src);
    let out = dev.alloc(8);
    dev.launch("readtab", cfg(1, 1), &[&out.to_le_bytes()])
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(get_u64(&dev, out, 1), vec![3]);
}

#[test]
fn endless_loop_hits_the_step_limit() {
    let src = r#"
.visible .entry spin()
{
$L__top:
	bra.uni 	$L__top;
}
"#;
    let mut dev = device(src);
    dev.set_step_limit(10_000);
    match dev.launch("spin", cfg(2, 32), &[]) {
        Err(SimError::StepLimit { at, limit }) => {
            assert_eq!(limit, 10_000);
            assert_eq!(at.kernel, "spin");
        }
        other => panic!("wrong result {other:?}"),
    }
}

#[test]
fn static_shared_limit_counts_what_the_entry_uses() {
    // 40 KiB of shared memory that `small` never touches.
    let src = r#"
.shared .align 8 .b8 big[40960];

.visible .entry small()
{
	ret;
}

.visible .entry large()
{
	.reg .b64 	%rd<2>;

	mov.u64 	%rd1, big;
	ret;
}
"#;
    let mut dev = device(src);
    let mut l = cfg(1, 1);
    l.dynamic_shared_bytes = 16 * 1024;
    assert!(dev.launch("small", l, &[]).is_ok());
    assert!(matches!(
        dev.launch("large", l, &[]),
        Err(SimError::LaunchLimit { .. })
    ));
}

#[test]
fn threads_at_different_barriers_are_reported() {
    let src = r#"
.visible .entry twobars()
{
	.reg .pred 	%p<2>;
	.reg .b32 	%r<2>;

	mov.u32 	%r1, %tid.x;
	setp.lt.u32 	%p1, %r1, 32;
	@%p1 bra 	$L__low;
	bar.sync 	1;
	ret;
$L__low:
	bar.sync 	0;
	ret;
}
"#;
    let mut dev = device(src);
    match dev.launch("twobars", cfg(1, 64), &[]) {
        Err(SimError::DivergentBarrier { kernel, detail, .. }) => {
            assert_eq!(kernel, "twobars");
            assert!(
                detail.contains("bar.sync 0") && detail.contains("bar.sync 1"),
                "{detail}"
            );
        }
        other => panic!("wrong result {other:?}"),
    }
}

/// Vector loads and stores (`.v2`, `.v4`), with an immediate among the stored elements, as
/// NVPTX emits them for a struct of two words: each element at its own offset, in order.
const VECTORS: &str = r#"
.visible .entry swap_pairs(
	.param .u64 swap_pairs_io
)
{
	.reg .b32 	%r<8>;
	.reg .b64 	%rd<6>;

	ld.param.u64 	%rd1, [swap_pairs_io];
	cvta.to.global.u64 	%rd2, %rd1;
	ld.global.v2.u32 	{%r1, %r2}, [%rd2];
	st.global.v2.b32 	[%rd2+8], {%r2, %r1};
	st.global.v2.b32 	[%rd2+16], {0, %r1};
	ld.global.v4.u32 	{%r3, %r4, %r5, %r6}, [%rd2];
	add.s32 	%r7, %r3, %r6;
	st.global.u32 	[%rd2+24], %r7;
	ld.global.v2.f64 	{%rd3, %rd4}, [%rd2+32];
	st.global.v2.f64 	[%rd2+48], {%rd4, %rd3};
	ret;
}
"#;

#[test]
fn vector_loads_and_stores_move_each_element() {
    let mut dev = device(VECTORS);
    let io = dev.alloc(64);
    let mut bytes = vec![0u8; 64];
    bytes[..4].copy_from_slice(&7u32.to_le_bytes());
    bytes[4..8].copy_from_slice(&9u32.to_le_bytes());
    bytes[32..40].copy_from_slice(&1.5f64.to_le_bytes());
    bytes[40..48].copy_from_slice(&(-2.0f64).to_le_bytes());
    dev.write(io, &bytes).unwrap();
    dev.launch("swap_pairs", cfg(1, 1), &[&io.to_le_bytes()])
        .unwrap_or_else(|e| panic!("{e}"));
    let mut out = vec![0u8; 64];
    dev.read(io, &mut out).unwrap();
    let word = |at: usize| u32::from_le_bytes(out[at..at + 4].try_into().unwrap());
    assert_eq!([word(8), word(12), word(16), word(20)], [9, 7, 0, 7]);
    // The v4 load read words 0..4 (7, 9, 9, 7): 7 + 7.
    assert_eq!(word(24), 14);
    assert_eq!(get_f64(&dev, io + 48, 2), [-2.0, 1.5]);
}
