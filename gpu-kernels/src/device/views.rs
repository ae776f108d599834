//! Raw kernels' arguments: how a kernel sees its slices, on either target; and the terms'
//! view of their variables as [`Num`]s.

use crate::real::Num;

/// `x` as the [`Num`]s a term computes with, without copying.
#[inline(always)]
pub fn as_nums<R>(x: &[R]) -> &[Num<R>] {
    // SAFETY: `Num<R>` is `#[repr(transparent)]` over `R`: same size, alignment and validity,
    // so the slice reinterprets element for element, for as long as `x` is borrowed.
    unsafe { core::slice::from_raw_parts(x.as_ptr().cast::<Num<R>>(), x.len()) }
}

/// A slice argument as a raw kernel receives it: device address and length, one 16-byte
/// `.param` (the struct is `#[repr(C)]`).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SliceArg {
    /// The device address of the first element.
    pub ptr: u64,
    /// The number of `f64` elements.
    pub len: u64,
}

/// A raw kernel's output buffer. Any thread may [`set`](Out::set) any element or
/// [`add`](Out::add) to it atomically, as in CUDA; which write lands last among threads that
/// write the same element is unspecified, as on the GPU. Indices out of range panic (trap on
/// the GPU).
#[derive(Clone, Copy)]
pub struct Out<'a> {
    #[cfg(target_arch = "nvptx64")]
    ptr: *mut f64,
    #[cfg(target_arch = "nvptx64")]
    len: usize,
    #[cfg(target_arch = "nvptx64")]
    buffer: core::marker::PhantomData<&'a mut [f64]>,
    /// On the CPU, threads share the buffer as atomic cells holding f64 bits.
    #[cfg(not(target_arch = "nvptx64"))]
    cells: &'a [core::sync::atomic::AtomicU64],
}

#[cfg(target_arch = "nvptx64")]
impl Out<'_> {
    /// The number of elements.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Writes `value` to element `i`.
    pub fn set(&self, i: usize, value: f64) {
        assert!(i < self.len);
        // SAFETY: in bounds; the host launcher passed a live device buffer of `len` f64.
        unsafe { self.ptr.add(i).write(value) }
    }

    /// Adds `value` to element `i`, atomically.
    pub fn add(&self, i: usize, value: f64) {
        assert!(i < self.len);
        // SAFETY: as above; the buffer is in global memory.
        unsafe { super::atomic_add_f64(self.ptr.add(i), value) };
    }
}

#[cfg(not(target_arch = "nvptx64"))]
impl<'a> Out<'a> {
    /// Shares `values` among the CPU executor's threads for the duration of a launch.
    pub fn new(values: &'a mut [f64]) -> Self {
        use core::sync::atomic::AtomicU64;
        const { assert!(align_of::<AtomicU64>() == align_of::<f64>()) };
        // SAFETY: AtomicU64 has the size of f64 and (checked above) its alignment; the
        // exclusive borrow guarantees no other access while the cells live.
        let cells = unsafe {
            core::slice::from_raw_parts(values.as_mut_ptr().cast::<AtomicU64>(), values.len())
        };
        Out { cells }
    }

    /// The number of elements.
    pub fn len(&self) -> usize {
        self.cells.len()
    }

    /// Writes `value` to element `i`.
    pub fn set(&self, i: usize, value: f64) {
        self.cells[i].store(value.to_bits(), core::sync::atomic::Ordering::Relaxed);
    }

    /// Adds `value` to element `i`, atomically (a compare-and-swap loop).
    pub fn add(&self, i: usize, value: f64) {
        use core::sync::atomic::Ordering::Relaxed;
        let cell = &self.cells[i];
        let mut current = cell.load(Relaxed);
        while let Err(seen) = cell.compare_exchange_weak(
            current,
            (f64::from_bits(current) + value).to_bits(),
            Relaxed,
            Relaxed,
        ) {
            current = seen;
        }
    }
}

impl Out<'_> {
    /// Whether the buffer has no elements.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// The slice a kernel argument describes.
///
/// # Safety
/// `arg` must describe `len` initialized f64 in device memory that nothing writes during the
/// kernel.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
pub unsafe fn input<'a>(arg: SliceArg) -> &'a [f64] {
    unsafe { super::slice(arg.ptr as *const f64, arg.len as usize) }
}

/// The output buffer a kernel argument describes.
///
/// # Safety
/// `arg` must describe `len` f64 of device memory that lives for the kernel.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
pub unsafe fn output<'a>(arg: SliceArg) -> Out<'a> {
    Out {
        ptr: arg.ptr as *mut f64,
        len: arg.len as usize,
        buffer: core::marker::PhantomData,
    }
}

/// A `.shared` array of `N` f64, one per block. Made by [`shared_array!`](crate::shared_array).
/// Reads and writes are volatile, so they are not cached across [`sync`](crate::raw::Block::sync).
#[cfg(target_arch = "nvptx64")]
#[derive(Clone, Copy)]
pub struct SharedArray<const N: usize> {
    ptr: *mut f64,
}

#[cfg(target_arch = "nvptx64")]
impl<const N: usize> SharedArray<N> {
    /// # Safety
    /// `address` must be the generic address of a `.shared` array of `N` f64.
    #[doc(hidden)]
    pub unsafe fn from_generic(address: u64) -> Self {
        SharedArray {
            ptr: address as *mut f64,
        }
    }

    /// Element `i` (a volatile read).
    pub fn get(&self, i: usize) -> f64 {
        assert!(i < N);
        // SAFETY: in bounds of the block's array.
        unsafe { self.ptr.add(i).read_volatile() }
    }

    /// Writes `value` to element `i` (a volatile write); the block's other threads see it
    /// after a [`sync`](crate::raw::Block::sync).
    pub fn set(&self, i: usize, value: f64) {
        assert!(i < N);
        // SAFETY: in bounds of the block's array.
        unsafe { self.ptr.add(i).write_volatile(value) }
    }
}

/// Declares a `.shared` array of `LEN` f64 named `SYMBOL` (unique in the module) and returns a
/// [`SharedArray`] for it. GPU-only, like the block kernels that use it. (`.shared` statics
/// cannot be Rust statics: a `link_section` lands in global memory; so the array is declared
/// in module-level PTX and addressed with `cvta.shared`.)
#[cfg(target_arch = "nvptx64")]
#[macro_export]
// Declares the array with inline PTX, in the caller's crate: this crate's plumbing.
#[cfg_attr(
    target_arch = "nvptx64",
    allow_internal_unstable(asm_experimental_arch),
    allow_internal_unsafe
)]
macro_rules! shared_array {
    ($symbol:ident, $len:literal) => {{
        ::core::arch::global_asm!(concat!(
            ".shared .align 8 .f64 ", stringify!($symbol), "[", stringify!($len), "];"
        ));
        let address: u64;
        // SAFETY: takes the address of the array declared above; touches no memory.
        unsafe {
            ::core::arch::asm!(
                concat!("cvta.shared.u64 {a}, ", stringify!($symbol), ";"),
                a = out(reg64) address,
            )
        };
        // SAFETY: `address` is that of a `.shared` array of `$len` f64.
        unsafe { $crate::device::SharedArray::<$len>::from_generic(address) }
    }};
}
