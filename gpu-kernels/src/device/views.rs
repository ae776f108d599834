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

/// Every `stride`-th element of a slice, `len` of them: the columns of one row of a
/// column-major matrix. The bounds are checked once, when the view is made; [`get`](Self::get)
/// then compares only `i` with `len`, which the compiler drops in a loop over `0..len`. (A
/// checked read per column, `values.get(c·rows + row)`, cost a dense term's value pass a
/// seventh of its time: lsq-expsin reads 14 columns per point.)
#[derive(Clone, Copy, Debug)]
pub struct Strided<'a> {
    first: *const f64,
    stride: usize,
    len: usize,
    values: core::marker::PhantomData<&'a [f64]>,
}

/// What a [`Strided`] view of elements that are not all in its slice reads, at stride 0.
static NAN: f64 = f64::NAN;

impl<'a> Strided<'a> {
    /// Elements `start`, `start + stride`, … of `values`, `len` of them; `len` NaNs instead
    /// unless all of them lie in `values`. Either way the view has `len` elements, so that one
    /// loop over them serves both cases.
    #[inline(always)]
    pub fn new(values: &'a [f64], start: usize, stride: usize, len: usize) -> Self {
        let in_bounds = match len.checked_sub(1) {
            None => true,
            Some(last_step) => last_step
                .checked_mul(stride)
                .and_then(|step| step.checked_add(start))
                .is_some_and(|last| last < values.len()),
        };
        if in_bounds {
            Strided {
                // Not `add`: with `len` = 0, `start` may lie past the slice.
                first: values.as_ptr().wrapping_add(start),
                stride,
                len,
                values: core::marker::PhantomData,
            }
        } else {
            Strided {
                first: &NAN,
                stride: 0,
                len,
                values: core::marker::PhantomData,
            }
        }
    }

    /// The number of elements.
    #[inline(always)]
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the view has no elements.
    #[inline(always)]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The elements as a slice where they lie side by side (stride 1), which a loop can then
    /// read several at a time.
    #[inline(always)]
    pub fn contiguous(&self) -> Option<&'a [f64]> {
        if self.stride == 1 {
            // SAFETY: with stride 1, `new` checked that `start .. start + len` lies in the
            // borrowed slice (or `len` is 0 and the pointer is not read), borrowed for `'a`.
            Some(unsafe { core::slice::from_raw_parts(self.first, self.len) })
        } else {
            None
        }
    }

    /// Element `i` of the view; NaN for `i ≥ len`.
    #[inline(always)]
    pub fn get(&self, i: usize) -> f64 {
        if i < self.len {
            // SAFETY: either `new` checked that `start + (len − 1)·stride` is an index of the
            // borrowed slice, without overflow, and `i < len` keeps `i·stride` within that; or
            // the stride is 0 and `first` points to the static NaN.
            unsafe { *self.first.add(i * self.stride) }
        } else {
            f64::NAN
        }
    }
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

#[cfg(test)]
mod tests {
    use super::Strided;

    #[test]
    fn strided_views_read_in_bounds_or_nan() {
        // Three columns of two rows; row 1's columns are at 1, 3, 5.
        let values = [0.0, 1.0, 2.0, 3.0, 4.0, 5.0];
        let row = Strided::new(&values, 1, 2, 3);
        assert_eq!(
            (row.len(), row.get(0), row.get(1), row.get(2)),
            (3, 1.0, 3.0, 5.0)
        );
        assert!(row.get(3).is_nan(), "past the view");
        // One element past the slice makes every element NaN, and keeps the length.
        let short = Strided::new(&values, 1, 2, 4);
        assert_eq!(short.len(), 4);
        assert!((0..5).all(|i| short.get(i).is_nan()));
        // A stride whose last step overflows is out of bounds, not a wrapped read.
        assert!(Strided::new(&values, 1, usize::MAX, 2).get(0).is_nan());
        assert!(Strided::new(&values, usize::MAX, 1, 1).get(0).is_nan());
        // Empty views, anywhere.
        assert!(Strided::new(&values, 100, 7, 0).is_empty());
        assert!(Strided::new(&[], 0, 0, 0).get(0).is_nan());
        // Stride 1: a slice.
        let all = Strided::new(&values, 0, 1, 6);
        assert_eq!((0..6).map(|i| all.get(i)).sum::<f64>(), 15.0);
    }
}
