/* report.js and report.css (dcpi/html.h), carried in the binary so that
 * dcpi report needs no file of its own at run time.  Each ends with a NUL. */
	.section .rodata
	.global dcpi_html_js
	.type dcpi_html_js, @object
dcpi_html_js:
	.incbin "lib/export/report.js"
	.byte 0
	.size dcpi_html_js, . - dcpi_html_js
	.global dcpi_html_css
	.type dcpi_html_css, @object
dcpi_html_css:
	.incbin "lib/export/report.css"
	.byte 0
	.size dcpi_html_css, . - dcpi_html_css
	.section .note.GNU-stack, "", @progbits
